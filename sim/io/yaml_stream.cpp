#include "io/yaml_stream.hpp"

#include <exception>
#include <filesystem>
#include <fstream>
#include <istream>
#include <memory>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include "core/errors.hpp"
#include "io/node_mark.hpp"
#include "io/text_file.hpp"
#include "io/yaml_reader.hpp"

namespace osim {

namespace {

// Builds nodes from the parser's events as yaml-cpp's own builder does
// (marks, tags, styles, anchors), except that the items of the streamed
// lists go to the handler as each one ends.
class StreamBuilder : public YAML::EventHandler {
 public:
  StreamBuilder(std::string file, const StreamedList& list, const StreamHandler& handler) : file_(std::move(file)), list_(list), handler_(handler) {}

  [[nodiscard]] const YAML::Node& root() const { return root_; }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { add(made(YAML::Node(YAML::NodeType::Null), mark, anchor)); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (anchor == YAML::NullAnchor || anchor > anchors_.size())
      throw InputError(SourceLocation{file_, mark.line + 1, mark.column + 1}, "an alias to an anchor not defined before it");
    add(anchors_[anchor - 1]);
  }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor, const std::string& value) override {
    YAML::Node n(value);
    n.SetTag(tag);
    add(made(n, mark, anchor));
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor, YAML::EmitterStyle::value style) override {
    open(YAML::NodeType::Sequence, mark, tag, anchor, style);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor, YAML::EmitterStyle::value style) override {
    open(YAML::NodeType::Map, mark, tag, anchor, style);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Frame {
    YAML::Node node;
    std::string key;         // the key it is the value of in a mapping; "" otherwise
    size_t items = 0;        // sequence: items added so far
    YAML::Node pending;      // mapping: a key waiting for its value
    bool has_key = false;    // mapping: `pending` is set
    bool streamed = false;   // its items go to the handler
    size_t outer_index = 0;  // streamed: the outer list's entry it is in
  };

  YAML::Node made(YAML::Node n, const YAML::Mark& mark, YAML::anchor_t anchor) {
    set_node_mark(n, mark);
    if (anchor != YAML::NullAnchor) {
      if (anchors_.size() < anchor) anchors_.resize(anchor);
      anchors_[anchor - 1].reset(n);
    }
    return n;
  }

  void open(YAML::NodeType::value type, const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor, YAML::EmitterStyle::value style) {
    YAML::Node n(type);
    n.SetTag(tag);
    n.SetStyle(style);
    Frame f;
    f.node.reset(made(n, mark, anchor));
    if (!stack_.empty() && stack_.back().node.IsMap() && stack_.back().has_key && stack_.back().pending.IsScalar())
      f.key = stack_.back().pending.Scalar();
    // root[outer][*][inner]: the stack holds the root, the outer list and its entry.
    if (type == YAML::NodeType::Sequence && stack_.size() == 3 && f.key == list_.inner && stack_[1].key == list_.outer &&
        stack_[1].node.IsSequence() && stack_[2].node.IsMap()) {
      f.streamed = true;
      f.outer_index = stack_[1].items;
      if (handler_.on_open) handler_.on_open(f.outer_index, stack_[0].node, stack_[2].node);
    }
    stack_.push_back(std::move(f));
  }

  void close() {
    YAML::Node n = stack_.back().node;
    if (stack_.back().streamed && handler_.on_close) handler_.on_close(stack_.back().outer_index);
    stack_.pop_back();
    add(n);
  }

  void add(const YAML::Node& n) {
    if (stack_.empty()) {
      root_.reset(n);
      return;
    }
    Frame& f = stack_.back();
    if (f.node.IsSequence()) {
      if (f.streamed) {
        check_yaml_shape(n, file_);
        handler_.on_item(f.outer_index, n);
      } else {
        f.node.push_back(n);
      }
      ++f.items;
    } else if (!f.has_key) {
      f.pending.reset(n);  // a Node's operator= assigns to the node it refers to
      f.has_key = true;
    } else {
      f.node.force_insert(f.pending, n);
      f.has_key = false;
    }
  }

  std::string file_;
  const StreamedList& list_;
  const StreamHandler& handler_;
  std::vector<Frame> stack_;
  std::vector<YAML::Node> anchors_;  // by anchor id - 1
  YAML::Node root_;
};

// A source stream buffer whose read errors (a corrupt or cut-short gzip: InputError) end the input
// and are kept for the caller to rethrow: yaml-cpp leaks a buffer when a read throws while its
// Stream is being constructed, so no exception may pass through the parser.
class KeptErrorBuf : public std::streambuf {
 public:
  explicit KeptErrorBuf(std::streambuf& src) : src_(src) {}
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (error_) return traits_type::eof();
    std::streamsize n = 0;
    try {
      n = src_.sgetn(buf_, sizeof buf_);
    } catch (...) {
      error_ = std::current_exception();
    }
    if (n <= 0) return traits_type::eof();
    setg(buf_, buf_, buf_ + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  std::streambuf& src_;
  std::exception_ptr error_;
  char buf_[1 << 16];
};

}  // namespace

YAML::Node stream_yaml_file(const std::string& path, const StreamedList& list, const StreamedItem& on_item) {
  return stream_yaml_file(path, list, StreamHandler{.on_open = {}, .on_item = on_item, .on_close = {}});
}

YAML::Node stream_yaml_file(const std::string& path, const StreamedList& list, const StreamHandler& handler) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(SourceLocation{path, 0, 0}, "is a folder: give a YAML file");
  if (!std::ifstream(path)) throw InputError(SourceLocation{path, 0, 0}, "cannot open file: check the path");
  // Plain or gzip-compressed (reference runs keep schedule.yaml.gz), decompressed a block at a time;
  // a read error (a corrupt or cut-short gzip) ends the input and is thrown after the parser, before
  // anything it made of the input cut short.
  const std::unique_ptr<std::streambuf> source = open_maybe_gzip(path);
  KeptErrorBuf buf(*source);
  std::istream in(&buf);
  StreamBuilder b(path, list, handler);
  try {
    YAML::Parser parser(in);
    parser.HandleNextDocument(b);
  } catch (const YAML::ParserException& e) {
    buf.rethrow();
    throw InputError(SourceLocation{path, e.mark.line + 1, e.mark.column + 1}, fmt::format("YAML syntax error: {}", e.msg));
  } catch (const InputError&) {
    buf.rethrow();  // an item's error on input cut short: the read error is the cause
    throw;
  }
  buf.rethrow();
  const YAML::Node& root = b.root();
  if (!root.IsMap()) throw InputError(SourceLocation{path, 1, 1}, "expected a YAML mapping at the top level");
  check_yaml_shape(root, path);
  return root;
}

}  // namespace osim
