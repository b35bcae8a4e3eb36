#include "lib/runtime/export/tf_graph.h"

#include <utility>

#include "lib/base/strings.h"

namespace dtf::runtime {
namespace {

using tensorflow::DataType;
using tensorflow::NodeDef;
using tensorflow::TensorProto;

bool TfNameChar(char c, bool first) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
      (c >= '0' && c <= '9') || c == '.') {
    return true;
  }
  return !first && (c == '_' || c == '-' || c == '/');
}

void TfSetShape(tensorflow::TensorShapeProto* proto,
                std::span<const int64_t> dims) {
  for (int64_t d : dims) proto->add_dim()->set_size(d);
}

NodeDef* TfConst(TfGraph* g, std::string_view name, DataType type,
                 const std::vector<int64_t>& shape, TensorProto** tensor) {
  NodeDef* node = g->Add(name, "Const");
  TfGraph::SetType(node, "dtype", type);
  TensorProto* t = (*node->mutable_attr())["value"].mutable_tensor();
  t->set_dtype(type);
  TfSetShape(t->mutable_tensor_shape(), shape);
  *tensor = t;
  return node;
}

}  // namespace

std::string TfNodeName(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    out.push_back(TfNameChar(text[i], i == 0) ? text[i] : '_');
  }
  if (out.empty()) out.push_back('_');
  if (!TfNameChar(out[0], true)) out[0] = 'x';
  return out;
}

std::string TfOutput(std::string_view node, int i) {
  return i == 0 ? std::string(node) : StrCat(node, ":", i);
}

NodeDef* TfGraph::Add(std::string_view name, std::string_view op,
                      std::vector<std::string> inputs) {
  const std::string base = TfNodeName(name);
  std::string unique = base;
  for (int k = 1; names_.count(unique) > 0; ++k) unique = StrCat(base, "_", k);
  names_.insert(unique);
  NodeDef* node = graph_.add_node();
  node->set_name(unique);
  node->set_op(std::string(op));
  for (std::string& in : inputs) node->add_input(std::move(in));
  return node;
}

void TfGraph::SetType(NodeDef* node, const std::string& key, DataType type) {
  (*node->mutable_attr())[key].set_type(type);
}

void TfGraph::SetInt(NodeDef* node, const std::string& key, int64_t value) {
  (*node->mutable_attr())[key].set_i(value);
}

void TfGraph::SetBool(NodeDef* node, const std::string& key, bool value) {
  (*node->mutable_attr())[key].set_b(value);
}

void TfGraph::SetString(NodeDef* node, const std::string& key,
                        std::string_view value) {
  (*node->mutable_attr())[key].set_s(std::string(value));
}

void TfGraph::SetShape(NodeDef* node, const std::string& key,
                       std::span<const int64_t> dims) {
  TfSetShape((*node->mutable_attr())[key].mutable_shape(), dims);
}

void TfGraph::SetTypeList(NodeDef* node, const std::string& key,
                          std::span<const DataType> types) {
  auto* list = (*node->mutable_attr())[key].mutable_list();
  for (DataType t : types) list->add_type(t);
}

void TfGraph::SetFloatList(NodeDef* node, const std::string& key,
                           std::span<const float> values) {
  auto* list = (*node->mutable_attr())[key].mutable_list();
  for (float v : values) list->add_f(v);
}

std::string TfGraph::Floats(std::string_view name,
                            std::span<const float> values,
                            std::vector<int64_t> shape) {
  TensorProto* t = nullptr;
  NodeDef* node = TfConst(this, name, tensorflow::DT_FLOAT, shape, &t);
  for (float v : values) t->add_float_val(v);
  return node->name();
}

std::string TfGraph::Int64s(std::string_view name,
                            std::span<const int64_t> values,
                            std::vector<int64_t> shape) {
  TensorProto* t = nullptr;
  NodeDef* node = TfConst(this, name, tensorflow::DT_INT64, shape, &t);
  for (int64_t v : values) t->add_int64_val(v);
  return node->name();
}

std::string TfGraph::Int32s(std::string_view name,
                            std::span<const int32_t> values,
                            std::vector<int64_t> shape) {
  TensorProto* t = nullptr;
  NodeDef* node = TfConst(this, name, tensorflow::DT_INT32, shape, &t);
  for (int32_t v : values) t->add_int_val(v);
  return node->name();
}

std::string TfGraph::Strings(std::string_view name,
                             std::span<const std::string> values,
                             std::vector<int64_t> shape) {
  TensorProto* t = nullptr;
  NodeDef* node = TfConst(this, name, tensorflow::DT_STRING, shape, &t);
  for (const std::string& v : values) t->add_string_val(v);
  return node->name();
}

std::string TfGraph::Float(std::string_view name, float value) {
  return Floats(name, std::span<const float>(&value, 1), {});
}

std::string TfGraph::Double(std::string_view name, double value) {
  TensorProto* t = nullptr;
  NodeDef* node = TfConst(this, name, tensorflow::DT_DOUBLE, {}, &t);
  t->add_double_val(value);
  return node->name();
}

std::string TfGraph::Int64(std::string_view name, int64_t value) {
  return Int64s(name, std::span<const int64_t>(&value, 1), {});
}

std::string TfGraph::Int32(std::string_view name, int32_t value) {
  return Int32s(name, std::span<const int32_t>(&value, 1), {});
}

std::string TfGraph::String(std::string_view name, std::string_view value) {
  const std::string v(value);
  return Strings(name, std::span<const std::string>(&v, 1), {});
}

std::string TfGraph::Op(std::string_view name, std::string_view op,
                        std::vector<std::string> inputs, DataType type,
                        const std::string& type_attr) {
  NodeDef* node = Add(name, op, std::move(inputs));
  SetType(node, type_attr, type);
  return node->name();
}

std::string TfGraph::Cast(std::string_view name, const std::string& x,
                          DataType from, DataType to) {
  NodeDef* node = Add(name, "Cast", {x});
  SetType(node, "SrcT", from);
  SetType(node, "DstT", to);
  SetBool(node, "Truncate", false);
  return node->name();
}

std::string TfGraph::Gather(std::string_view name, const std::string& params,
                            const std::string& indices, DataType type,
                            int32_t axis) {
  const std::string a = Int32(StrCat(name, "/axis"), axis);
  NodeDef* node = Add(name, "GatherV2", {params, indices, a});
  SetType(node, "Tparams", type);
  SetType(node, "Tindices", tensorflow::DT_INT64);
  SetType(node, "Taxis", tensorflow::DT_INT32);
  SetInt(node, "batch_dims", 0);
  return node->name();
}

std::string TfGraph::Reshape(std::string_view name, const std::string& x,
                             std::initializer_list<int64_t> shape,
                             DataType type) {
  const std::string s =
      Int64s(StrCat(name, "/shape"),
             std::span<const int64_t>(shape.begin(), shape.size()),
             {static_cast<int64_t>(shape.size())});
  NodeDef* node = Add(name, "Reshape", {x, s});
  SetType(node, "T", type);
  SetType(node, "Tshape", tensorflow::DT_INT64);
  return node->name();
}

std::string TfGraph::Pack(std::string_view name,
                          std::vector<std::string> values, DataType type,
                          int64_t axis) {
  const auto n = static_cast<int64_t>(values.size());
  NodeDef* node = Add(name, "Pack", std::move(values));
  SetType(node, "T", type);
  SetInt(node, "N", n);
  SetInt(node, "axis", axis);
  return node->name();
}

std::string TfGraph::Concat(std::string_view name,
                            std::vector<std::string> values, DataType type,
                            int32_t axis) {
  const auto n = static_cast<int64_t>(values.size());
  const std::string a = Int32(StrCat(name, "/axis"), axis);
  values.push_back(a);
  NodeDef* node = Add(name, "ConcatV2", std::move(values));
  SetType(node, "T", type);
  SetInt(node, "N", n);
  SetType(node, "Tidx", tensorflow::DT_INT32);
  return node->name();
}

}  // namespace dtf::runtime
