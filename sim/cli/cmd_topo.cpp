// overlapsim topo, overlapsim flows: a topology's routes, and a list of
// transfers on its fabric.
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "calib/bench_doc.hpp"
#include "cli/common.hpp"
#include "fabric/transfers.hpp"
#include "gpu/nccl_tuning.hpp"
#include "hw/fabric.hpp"
#include "hw/nvidia_smi.hpp"
#include "io/text_file.hpp"

namespace osim::cli {

namespace {
struct TopoOptions {
  std::string topology, scenario;
  bool p2p_disable = false;
  bool nccl = false;
  std::string nccl_algo, nccl_proto;  // NCCL_ALGO / NCCL_PROTO for --nccl
  bool nccl_nvls = false;             // NCCL_NVLS_ENABLE=1 for --nccl
  std::string nccl_cpu;               // the CPU NCCL finds ("": by GPU generation)
};
struct ImportSmiOptions {
  std::string smi, gpus_csv, out, name, pcie;  // pcie "": gen5 x16, or what a bench result says
  std::string c2c;                             // `nvidia-smi c2c -s` output ("": a bench result's, else none)
  std::string smi_q;                           // `nvidia-smi -q` output: its GPU C2C Mode, where c2c lists no rate
  std::string datasheets;                      // "": configs/gpus.yaml as built in
  bool force = false, as_smi = false;
};

// A capture the user saved on the node (maybe gzipped), refused where it
// cannot be read or is empty; `hint` says how to save it.
std::string read_capture(const std::string& path, const std::string& hint) {
  std::error_code exists_ec;
  std::string text = fs::is_regular_file(path, exists_ec) ? read_maybe_gzip(path) : std::string();
  if (text.empty()) throw InputError(SourceLocation{path, 0, 0}, "cannot read this file (or it is empty)" + hint);
  return text;
}

// topo --import-nvidia-smi: the matrix read, a topology written (never over
// a file without --force), read back and its matrix compared with the input.
int import_nvidia_smi(const ImportSmiOptions& o) {
  if (o.out.empty()) throw InputError(SourceLocation{o.smi, 0, 0}, "--import-nvidia-smi writes a topology: give -o node.yaml");
  claim_new_output(o.out, o.force);
  std::string text = read_capture(o.smi, ": save `nvidia-smi topo -m > topo.txt` on the node");  // a bench result may be kept gzipped
  hw::SmiImportOptions io;
  io.name = o.name.empty() ? fs::path(o.out).stem().string() : o.name;
  io.pcie = o.pcie.empty() ? "gen5 x16" : o.pcie;
  io.source = fs::path(o.smi).filename().string();
  // A bench result (overlapsim-validate bench) holds the matrix, the GPUs' names, their PCIe links and the host side's rates.
  std::optional<nlohmann::json> bench;
  if (text.find_first_not_of(" \t\r\n") != std::string::npos && text[text.find_first_not_of(" \t\r\n")] == '{') {
    bench = read_bench_json(o.smi);
    const nlohmann::json& doc = *bench;
    const nlohmann::json env = doc.value("environment", nlohmann::json::object());
    if (!env.contains("nvidia_smi_topo") || !env["nvidia_smi_topo"].is_string())
      throw InputError(SourceLocation{o.smi, 0, 0},
                       "no environment.nvidia_smi_topo: give `nvidia-smi topo -m` output, or a bench result of overlapsim-validate bench");
    text = env["nvidia_smi_topo"].get<std::string>();
    io.gpu_names = bench_gpu_names(doc);
    const std::string gen = nvidia_smi_column(doc, "pcie.link.gen.max"), width = nvidia_smi_column(doc, "pcie.link.width.max");
    if (o.pcie.empty() && !gen.empty() && !width.empty()) io.pcie = fmt::format("gen{} x{}", gen, width), io.pcie_measured = true;
    if (env.contains("nvidia_smi_c2c") && env["nvidia_smi_c2c"].is_string())
      io.c2c_GBps = hw::parse_nvidia_smi_c2c(env["nvidia_smi_c2c"].get<std::string>(), o.smi + " (environment.nvidia_smi_c2c)");
  }
  if (!o.c2c.empty()) {
    io.c2c_GBps = hw::parse_nvidia_smi_c2c(read_capture(o.c2c, ": save `nvidia-smi c2c -s > c2c.txt` on the node"), o.c2c);
  }
  if (!o.smi_q.empty()) {
    io.c2c_enabled = hw::parse_nvidia_smi_q_c2c(read_capture(o.smi_q, ": save `nvidia-smi -q > q.txt` on the node"));
  }
  const hw::SmiMatrix m = hw::parse_nvidia_smi_topo(text, o.smi);
  if (bench) {
    // The host side's throughput: the aggregate with every GPU of the node copying at once.
    int gpus = 0;
    for (size_t d = 0; d < m.devices.size(); ++d) gpus += m.is_gpu(d);
    for (const bool h2d : {true, false})
      for (const auto& r : rows(*bench, h2d ? "multi_h2d_pinned" : "multi_d2h_pinned"))
        if (gpus >= 2 && r.value("gpus", 0) == gpus && r.value("aggregate_GBps", 0.0) > 0)
          (h2d ? io.host_from_GBps : io.host_to_GBps) = r.at("aggregate_GBps").get<double>();
  }
  if (!o.gpus_csv.empty()) {
    io.gpu_names = hw::gpu_names_from_csv(read_capture(o.gpus_csv, ""), o.gpus_csv);
  }
  if (!o.datasheets.empty()) io.gpu_datasheets = hw::parse_gpu_datasheets(read_maybe_gzip(o.datasheets), o.datasheets);
  // No bench nor --gpus-csv: the GPUs' names where the capture lists them (`nvidia-smi -L`).
  if (io.gpu_names.empty()) io.gpu_names = m.gpu_names;
  const std::string yaml = hw::topology_yaml_from_smi(m, io);
  const hw::Topology topo(hw::parse_topology_string(yaml, o.out));
  const std::vector<std::string> diff = hw::compare_with_smi(topo, m);
  if (!diff.empty()) {
    std::string what = "the imported topology does not reproduce the matrix (please report it with the file):";
    for (const std::string& d : diff) what += "\n  " + d;
    throw InputError(SourceLocation{o.smi, 0, 0}, what);
  }
  if (const fs::path parent = fs::path(o.out).parent_path(); !parent.empty()) fs::create_directories(parent);
  write_file(o.out, yaml);
  std::cout << fmt::format("wrote {}: {} devices, every pair's path type as nvidia-smi's matrix has it; set the lines marked ASSUMED\n", o.out,
                           m.devices.size());
  if (m.spaced_lines > 0)
    std::cout << fmt::format("note: {} line(s) of the matrix have no tabs (copied from a terminal?): their cells were split at spaces\n",
                             m.spaced_lines);
  for (size_t g = 0; g < std::max(io.c2c_GBps.size(), io.c2c_enabled.size()); ++g)
    if (g < io.c2c_GBps.size() && io.c2c_GBps[g] > 0)
      std::cout << fmt::format("gpu{}'s host link: nvlink_c2c, {:.2f} GB/s a direction (nvidia-smi c2c -s)\n", g, io.c2c_GBps[g]);
    else if (g < io.c2c_enabled.size() && io.c2c_enabled[g])
      std::cout << fmt::format("gpu{}'s host link: nvlink_c2c, 450 GB/s a direction ASSUMED (nvidia-smi -q: GPU C2C Mode Enabled)\n", g);
  // A GH200's GPU reports its PCIe link as x1: without the C2C captures that say its host path is
  // NVLink-C2C, every PCIe link took that width.
  const bool c2c_known = std::any_of(io.c2c_GBps.begin(), io.c2c_GBps.end(), [](double g) { return g > 0; }) ||
                         std::any_of(io.c2c_enabled.begin(), io.c2c_enabled.end(), [](bool e) { return e; });
  if (io.pcie_measured && io.pcie.ends_with(" x1") && !c2c_known)
    std::cout << fmt::format(
        "nvidia-smi reports the GPUs' PCIe link as {}, as a Grace Hopper's GPU does (its host path is NVLink-C2C): "
        "give --nvidia-smi-c2c or --nvidia-smi-q on such a node, else every PCIe link here is {}\n",
        io.pcie, io.pcie);
  std::cout << hw::format_smi_matrix(topo);
  return 0;
}
// topo --nccl: NCCL's view of the node (gpu/nccl_topo.hpp) and what its
// tuning model predicts by size (gpu/nccl_tuning.hpp).
std::string format_nccl_view(const hw::Topology& topo, const TopoOptions& o) {
  exec::NcclTopoOptions vo;
  vo.p2p_disable = o.p2p_disable;
  if (!o.nccl_cpu.empty()) {
    vo.cpu = exec::nccl_cpu_from_string(o.nccl_cpu);
    if (!vo.cpu)
      throw InputError(
          SourceLocation{},
          fmt::format("--nccl-cpu '{}' is not one NCCL knows here: give one of intel-bdw, intel-skl, intel-spr, intel-emr, amd, arm", o.nccl_cpu));
  }
  const exec::NcclView v = exec::nccl_view(topo, vo);
  exec::NcclTuneOptions to;
  auto bad = [](const std::string& what, const std::string& got, const char* known) {
    return InputError(SourceLocation{}, fmt::format("{} '{}' is not one NCCL knows here: give one of {}", what, got, known));
  };
  if (o.nccl_algo == "ring" || o.nccl_algo == "Ring")
    to.algo = exec::NcclAlgo::Ring;
  else if (o.nccl_algo == "tree" || o.nccl_algo == "Tree")
    to.algo = exec::NcclAlgo::Tree;
  else if (o.nccl_algo == "nvls" || o.nccl_algo == "NVLS")
    to.algo = exec::NcclAlgo::Nvls;
  else if (o.nccl_algo == "nvlstree" || o.nccl_algo == "NVLSTree")
    to.algo = exec::NcclAlgo::NvlsTree;
  else if (!o.nccl_algo.empty())
    throw bad("--nccl-algo", o.nccl_algo, "ring, tree, nvls, nvlstree");
  if (to.algo == exec::NcclAlgo::Nvls || to.algo == exec::NcclAlgo::NvlsTree) {
    if (!o.nccl_nvls) throw InputError(SourceLocation{}, fmt::format("--nccl-algo {} needs --nccl-nvls (NVLS is off unless it is given)", o.nccl_algo));
  }
  if (o.nccl_nvls) exec::nccl_nvls_check(v, o.topology, SourceLocation{o.topology}), to.nvls = true;
  if (o.nccl_proto == "LL" || o.nccl_proto == "ll")
    to.proto = exec::NcclProto::LL;
  else if (o.nccl_proto == "LL128" || o.nccl_proto == "ll128")
    to.proto = exec::NcclProto::LL128;
  else if (o.nccl_proto == "Simple" || o.nccl_proto == "simple")
    to.proto = exec::NcclProto::Simple;
  else if (!o.nccl_proto.empty())
    throw bad("--nccl-proto", o.nccl_proto, "LL, LL128, Simple");
  const exec::NcclTuning tune(v, to);
  std::string out = fmt::format("NCCL's view of {} (rules of NCCL 2.30.7): {} GPUs on {} host(s), sm{}{}, CPU taken as {}\n", topo.name(),
                                v.gpus.size(), v.hosts, v.sm, v.sm_assumed ? " (a GPU model not known: assumed)" : "",
                                to_string(v.cpu) + (!o.nccl_cpu.empty() ? ""
                                                    : v.cpu_grace ? " (a Grace: its GPUs' NVLink-C2C; --nccl-cpu to set)"
                                                                  : " (by GPU generation; --nccl-cpu to set)"));
  const size_t shown = std::min<size_t>(static_cast<size_t>(v.ranks_per_host()), 16);
  out += "\npath type, bandwidth (GB/s) and transport per GPU pair" +
         std::string(v.hosts > 1 ? " (first host; other hosts alike, NET between hosts)" : "") + ":\n";
  for (size_t i = 0; i < shown; ++i) {
    out += fmt::format("  {:<8}", topo.node(v.gpus[i]).name);
    for (size_t j = 0; j < shown; ++j) {
      const exec::NcclPair& p = v.pair[i][j];
      out += i == j ? fmt::format(" {:<20}", "X")
                    : fmt::format(" {:<20}", fmt::format("{} {:.1f} {}", to_string(p.type), p.bw_GBps, to_string(p.transport)));
    }
    out += "\n";
  }
  out += fmt::format(
      "\nrings: {} search channel(s) x {:.1f} GB/s over {} paths (best path {:.1f} GB/s, a GPU's total {:.1f} GB/s); {} collective channels\n",
      v.ring.channels, v.ring.bw_intra_GBps, to_string(v.ring.type_intra), v.ring.max_bw_GBps, v.ring.total_bw_GBps, v.coll_channels);
  if (v.hosts > 1) out += fmt::format("across hosts: {} NIC(s) per host at {:.1f} GB/s each\n", v.nics_per_host, v.nic_bw_GBps);
  std::vector<std::vector<int>> distinct;
  for (const auto& r : v.ring.rings)
    if (std::find(distinct.begin(), distinct.end(), r) == distinct.end()) distinct.push_back(r);
  for (size_t c = 0; c < distinct.size() && c < 8; ++c) {
    out += fmt::format("  ring {}:", c);
    for (int g : distinct[c]) out += " " + topo.node(v.gpus[static_cast<size_t>(g)]).name;
    out += "\n";
  }
  if (distinct.size() > 8) out += fmt::format("  ... {} distinct rings\n", distinct.size());
  if (to.nvls)
    out += fmt::format("NVLS (NCCL_NVLS_ENABLE=1): {} channel(s) x {:.1f} GB/s intra, {:.1f} GB/s inter; run on {} CTAs (NCCL_NVLS_NCHANNELS)\n",
                       v.nvls.channels, v.nvls.bw_intra_GBps, v.nvls.bw_inter_GBps, v.nvls.cuda_channels);
  out += "\nexpected bus bandwidth (nccl-tests busbw, GB/s), NCCL's algorithm/protocol:\n";
  const std::vector<exec::NcclColl> colls = {exec::NcclColl::AllReduce, exec::NcclColl::AllGather, exec::NcclColl::ReduceScatter,
                                             exec::NcclColl::AllToAll};
  // NVLS-Tree's name is longer than the rest: its column widens only with NVLS on.
  const int name_w = to.nvls ? 15 : 13;
  out += fmt::format("  {:>10}", "size");
  for (exec::NcclColl c : colls) out += fmt::format("  {:>{}}", to_string(c), name_w + 9);
  out += "\n";
  for (double bytes = 1024; bytes <= 1024.0 * 1024 * 1024; bytes *= 8) {
    out += fmt::format("  {:>10}", format_bytes(bytes));
    for (exec::NcclColl c : colls) {
      const auto p = tune.predict(c, bytes);
      out += p ? fmt::format("  {:>8.1f} {:<{}}", p->busbw_GBps, to_string(p->algo) + "/" + to_string(p->proto), name_w)
               : fmt::format("  {:>{}}", "-", name_w + 9);
    }
    out += "\n";
  }
  // Columns are padded: no line ends in spaces.
  std::string trimmed;
  for (size_t at = 0; at < out.size();) {
    const size_t nl = out.find('\n', at);
    const std::string line = out.substr(at, nl - at);
    trimmed += line.substr(0, line.find_last_not_of(' ') + 1) + "\n";
    at = nl + 1;
  }
  return trimmed;
}
}  // namespace

Command add_topo(CLI::App& app) {
  auto o = std::make_shared<TopoOptions>();
  auto im = std::make_shared<ImportSmiOptions>();
  auto* c = app.add_subcommand("topo",
                               "Show a topology: nodes, GPU path types, and every GPU's routes with bottleneck bandwidth and latency; "
                               "or import one from `nvidia-smi topo -m`");
  c->add_option("topology", o->topology, "topology YAML");
  c->add_flag("--p2p-disable", o->p2p_disable, "route GPU<->GPU traffic as with NCCL_P2P_DISABLE=1");
  c->add_flag("--nccl", o->nccl, "print NCCL's view: path types, transports, rings and channels, expected bus bandwidth by size");
  c->add_option("--nccl-algo", o->nccl_algo, "with --nccl: the algorithm NCCL_ALGO forces (ring, tree; nvls, nvlstree with --nccl-nvls)");
  c->add_flag("--nccl-nvls", o->nccl_nvls,
              "with --nccl: NVLink SHARP on, as NCCL_NVLS_ENABLE=1 (NVSwitch with multicast, sm90 or later; off by default)");
  c->add_option("--nccl-proto", o->nccl_proto, "with --nccl: the protocol NCCL_PROTO forces (LL, LL128, Simple)");
  c->add_option("--nccl-cpu", o->nccl_cpu,
                "with --nccl: the CPU NCCL finds (intel-bdw, intel-skl, intel-spr, intel-emr, amd, arm; default by GPU generation)");
  c->add_flag("--nvidia-smi", im->as_smi, "print the GPUs' and NICs' path types as `nvidia-smi topo -m` prints them (to compare with a node's)");
  c->add_option("--import-nvidia-smi", im->smi,
                "write a topology (-o) from this `nvidia-smi topo -m` output, or from a bench result (overlapsim-validate bench records it)");
  c->add_option("--gpus-csv", im->gpus_csv, "with --import-nvidia-smi: `nvidia-smi --query-gpu=name,... --format=csv` output (the GPUs' models)");
  c->add_option("--pcie", im->pcie,
                "with --import-nvidia-smi: every PCIe link's generation and width, e.g. 'gen4 x16' (default: a bench result's, else gen5 x16)");
  c->add_option("--nvidia-smi-c2c", im->c2c,
                "with --import-nvidia-smi: `nvidia-smi c2c -s` output; a GPU it lists with active links gets an nvlink_c2c host link "
                "at their summed rate (default: a bench result's, if it recorded one)");
  c->add_option("--nvidia-smi-q", im->smi_q,
                "with --import-nvidia-smi: `nvidia-smi -q` output; a GPU whose GPU C2C Mode is Enabled and that --nvidia-smi-c2c "
                "lists no rate for gets an nvlink_c2c host link at 450 GB/s, marked ASSUMED");
  c->add_option("--gpu-datasheets", im->datasheets,
                "with --import-nvidia-smi: the GPUs' figures by name from this table (default: configs/gpus.yaml, built in)");
  c->add_option("--name", im->name, "with --import-nvidia-smi: the topology's name (default: the output file's)");
  c->add_option("-o,--out", im->out, "with --import-nvidia-smi: the topology file to write");
  c->add_flag("--force", im->force, "overwrite an existing -o file");
  return {c, [o, im] {
            if (!im->smi.empty()) return import_nvidia_smi(*im);
            if (o->topology.empty()) throw InputError(SourceLocation{}, "topo needs a topology YAML (or --import-nvidia-smi FILE -o node.yaml)");
            const hw::Topology topo(hw::parse_topology_file(o->topology));
            if (im->as_smi) {
              std::cout << hw::format_smi_matrix(topo);
              return 0;
            }
            if (o->nccl) {
              std::cout << format_nccl_view(topo, *o);
              return 0;
            }
            hw::RouteOptions opt;
            opt.p2p_disabled = o->p2p_disable;
            std::cout << format_topology_report(topo, opt);
            return 0;
          }};
}

Command add_flows(CLI::App& app) {
  auto o = std::make_shared<TopoOptions>();
  auto* c = app.add_subcommand("flows", "Simulate a list of transfers on a topology's fabric");
  c->add_option("scenario", o->scenario, "scenario YAML (transfers: src, dst, bytes, start)")->required();
  c->add_option("--topology,-t", o->topology, "topology YAML")->required();
  c->add_flag("--p2p-disable", o->p2p_disable, "route GPU<->GPU traffic as with NCCL_P2P_DISABLE=1");
  return {c, [o] {
            const hw::Topology topo(hw::parse_topology_file(o->topology));
            Scenario sc = parse_scenario_file(o->scenario, topo);
            if (o->p2p_disable) sc.route_options.p2p_disabled = true;
            const FabricRun run = run_transfers(topo, sc);
            std::cout << format_fabric_report(topo, sc, run);
            return 0;
          }};
}

}  // namespace osim::cli
