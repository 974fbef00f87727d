// Reading `overlapsim-validate bench` documents (schema overlapsim.bench/v1):
// a testcase's rows, which kind of run a document is, and several runs of
// one kind merged into one.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace osim {

using json = nlohmann::json;
/// Bench documents with the names they were read from (file paths).
using BenchDocs = std::vector<std::pair<std::string, json>>;

/// A bench document (any JSON document), plain or gzip-compressed; InputError
/// naming the file when it is missing, unreadable or not JSON.
json read_bench_json(const std::string& path);
/// The measured values of a bench document's rows: finite; times, sizes and
/// rates not negative (but offsets); repetition and sample counts at least 1;
/// sample lists not empty. InputError naming `file`, the row and its
/// testcase key otherwise. read_bench_json checks every document it reads.
void check_bench_values(const json& doc, const std::string& file);

/// The rows of testcase `key`, in document order.
std::vector<json> rows(const json& doc, const std::string& key);
bool has_key(const json& doc, const std::string& key);
/// Taken with NCCL_P2P_DISABLE=1.
bool p2p_disabled_run(const json& doc);
/// A machine run (copies or collectives), not e.g. an attention-only one.
bool machine_run(const json& doc);
/// The merged machine run of that kind, or null.
const json* find_doc(const BenchDocs& runs, bool p2p_disabled);
/// The bench's interference all-to-alls run on min(GPUs, 4) ranks (4 where
/// the document does not say).
int interference_ranks(const json& doc);

/// The GPUs the document ran on, by name, in order (environment.gpus; an
/// SDPA or framework file's environment.gpu); empty where it does not say.
std::vector<std::string> bench_gpu_names(const json& doc);
/// A column of the first GPU's row of the `nvidia-smi --query-gpu=... --format=csv`
/// output the bench recorded (environment.nvidia_smi), by its header name; "" where absent.
std::string nvidia_smi_column(const json& doc, const std::string& column);

/// Several runs of one kind (NCCL defaults, or NCCL_P2P_DISABLE=1) merged into
/// one: a later run's testcases replace an earlier run's of the same key,
/// interference rows pair by pair; attention-only documents stay apart.
BenchDocs merge_bench_runs(const BenchDocs& docs);

/// A row's text field that must be one of `allowed`; anything else is a
/// malformed row (std::invalid_argument naming the row and the choices).
std::string one_of(const json& r, const char* key, std::initializer_list<std::string_view> allowed);
/// The documents in the current bench format: what older benches wrote
/// differently is rewritten here, in one place (the rules are in
/// bench_doc.cpp), so that fits and replays read one format. calibrate and
/// compare_bench take their documents through it.
BenchDocs upgrade_bench_docs(BenchDocs docs);
json upgrade_bench_doc(json doc);
/// A bidir_pinned row of an older bench: one copy each way per sample, behind
/// two gates (upgrade_bench_doc marks it; its `reps` is 1).
bool one_copy_per_gate(const json& r);
/// What held a copy_reps burst, as the reports name it.
std::string copy_reps_gate(const std::string& gate);

}  // namespace osim
