#include "calib/fit.hpp"

#include <cmath>
#include <set>

#include <Eigen/Dense>

namespace osim {

CopyLine fit_copy_burst_line(const std::vector<CopyPoint>& pts, std::optional<double> burst) {
  CopyLine c;
  std::set<double> reps;
  for (const auto& pt : pts) reps.insert(pt.reps);
  const bool free_burst = !burst && reps.size() >= 2;
  const Eigen::Index cols = free_burst ? 3 : 2;
  if (static_cast<Eigen::Index>(pts.size()) < cols) return c;
  Eigen::MatrixXd A(static_cast<Eigen::Index>(pts.size()), cols);
  Eigen::VectorXd b(static_cast<Eigen::Index>(pts.size()));
  const double held = burst.value_or(0);
  for (size_t i = 0; i < pts.size(); ++i) {
    const auto row = static_cast<Eigen::Index>(i);
    const double w = 1.0 / pts[i].time;
    A(row, 0) = w;
    A(row, 1) = pts[i].bytes * w;
    if (free_burst) A(row, 2) = w / pts[i].reps;
    b(row) = (pts[i].time - (free_burst ? 0.0 : held / pts[i].reps)) * w;
  }
  const Eigen::VectorXd x = A.colPivHouseholderQr().solve(b);
  if (free_burst && x(2) < 0) return fit_copy_burst_line(pts, 0.0);
  c.latency_us = std::max(0.0, x(0));
  c.inv_beta = x(1);
  c.burst_us = free_burst ? x(2) : held;
  for (const auto& pt : pts) {
    const double pred = c.latency_us + pt.bytes * c.inv_beta + c.burst_us / pt.reps;
    c.sq += std::pow((pred - pt.time) / pt.time, 2);
  }
  c.n = static_cast<int>(pts.size());
  c.ok = c.inv_beta > 0;
  return c;
}

std::optional<BurstFit> fit_burst(const std::vector<BurstPoint>& pts, bool with_step) {
  std::map<double, Eigen::Index> col;
  std::set<double> reps;
  int stepped = 0;
  for (const auto& pt : pts) col.emplace(pt.group, 0), reps.insert(pt.reps), stepped += pt.step;
  if (reps.size() < 2 || (with_step && (stepped == 0 || stepped == static_cast<int>(pts.size())))) return std::nullopt;
  Eigen::Index k = 0;
  for (auto& [group, i] : col) i = k++;
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(pts.size()), k + (with_step ? 2 : 1));
  Eigen::VectorXd y(static_cast<Eigen::Index>(pts.size()));
  for (size_t i = 0; i < pts.size(); ++i) {
    const auto row = static_cast<Eigen::Index>(i);
    const double w = 1.0 / pts[i].time;
    A(row, col.at(pts[i].group)) = w;
    A(row, k) = w / pts[i].reps;
    if (with_step) A(row, k + 1) = (pts[i].step ? 1.0 : 0.0) * w;
    y(row) = (pts[i].time - pts[i].known) * w;
  }
  const Eigen::VectorXd x = A.colPivHouseholderQr().solve(y);
  BurstFit f;
  for (const auto& [group, i] : col) f.steady[group] = x(i);
  f.burst = x(k);
  f.step = with_step ? x(k + 1) : 0;
  double sq = 0;
  for (const auto& pt : pts) sq += std::pow((f.steady.at(pt.group) + f.burst / pt.reps + (pt.step ? f.step : 0) + pt.known) / pt.time - 1, 2);
  f.rms_pct = 100 * std::sqrt(sq / static_cast<double>(pts.size()));
  return f;
}

Fit fit_alpha_beta(const std::string& name, const std::vector<std::pair<double, double>>& pts) {
  Fit f;
  f.name = name;
  f.formula = "time = latency + bytes / bandwidth";
  f.points = static_cast<int>(pts.size());
  if (pts.size() < 2) return f;
  std::vector<CopyPoint> cp;
  for (const auto& [bytes, t] : pts) cp.push_back({bytes, 1, t});
  const CopyLine line = fit_copy_burst_line(cp, 0.0);
  f.values = {{"latency_us", line.latency_us}, {"bandwidth_GBps", 1e-3 / line.inv_beta}};
  f.rms_residual_pct = 100 * std::sqrt(line.sq / line.n);
  return f;
}

}  // namespace osim
