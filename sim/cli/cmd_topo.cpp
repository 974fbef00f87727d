// overlapsim topo, overlapsim flows: a topology's routes, and a list of
// transfers on its fabric.
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "calib/bench_doc.hpp"
#include "cli/common.hpp"
#include "fabric/transfers.hpp"
#include "hw/fabric.hpp"
#include "hw/nvidia_smi.hpp"
#include "io/text_file.hpp"

namespace osim::cli {

namespace {
struct TopoOptions {
  std::string topology, scenario;
  bool p2p_disable = false;
};
struct ImportSmiOptions {
  std::string smi, gpus_csv, out, name, pcie;  // pcie "": gen5 x16, or what a bench result says
  bool force = false, as_smi = false;
};

// topo --import-nvidia-smi: the matrix read, a topology written (never over
// a file without --force), read back and its matrix compared with the input.
int import_nvidia_smi(const ImportSmiOptions& o) {
  if (o.out.empty()) throw InputError(SourceLocation{o.smi, 0, 0}, "--import-nvidia-smi writes a topology: give -o node.yaml");
  refuse_overwrite(o.out, o.force);
  std::error_code exists_ec;
  std::string text = fs::is_regular_file(o.smi, exists_ec) ? read_maybe_gzip(o.smi) : std::string();  // a bench result may be kept gzipped
  if (text.empty())
    throw InputError(SourceLocation{o.smi, 0, 0}, "cannot read this file (or it is empty): save `nvidia-smi topo -m > topo.txt` on the node");
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
    const std::string csv = fs::is_regular_file(o.gpus_csv, exists_ec) ? read_maybe_gzip(o.gpus_csv) : std::string();
    if (csv.empty()) throw InputError(SourceLocation{o.gpus_csv, 0, 0}, "cannot read this file (or it is empty)");
    io.gpu_names = hw::gpu_names_from_csv(csv, o.gpus_csv);
  }
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
  std::cout << hw::format_smi_matrix(topo);
  return 0;
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
  c->add_flag("--nvidia-smi", im->as_smi, "print the GPUs' and NICs' path types as `nvidia-smi topo -m` prints them (to compare with a node's)");
  c->add_option("--import-nvidia-smi", im->smi,
                "write a topology (-o) from this `nvidia-smi topo -m` output, or from a bench result (overlapsim-validate bench records it)");
  c->add_option("--gpus-csv", im->gpus_csv, "with --import-nvidia-smi: `nvidia-smi --query-gpu=name,... --format=csv` output (the GPUs' models)");
  c->add_option("--pcie", im->pcie,
                "with --import-nvidia-smi: every PCIe link's generation and width, e.g. 'gen4 x16' (default: a bench result's, else gen5 x16)");
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
