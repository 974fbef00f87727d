// Setting a YAML node's source mark. yaml-cpp sets a node's mark only in its
// own builder, which it does not export; Node befriends as_if<T, S>, so this
// one specialisation (for a type of ours) sets the mark as that builder does.
#pragma once

#include <yaml-cpp/yaml.h>

namespace osim {
struct NodeMarkAccess {};
}  // namespace osim

namespace YAML {
template <>
struct as_if<osim::NodeMarkAccess, void> {
  static void set_mark(Node& n, const Mark& m) { n.m_pNode->set_mark(m); }
};
}  // namespace YAML

namespace osim {
inline void set_node_mark(YAML::Node& n, const YAML::Mark& m) { YAML::as_if<NodeMarkAccess, void>::set_mark(n, m); }
}  // namespace osim
