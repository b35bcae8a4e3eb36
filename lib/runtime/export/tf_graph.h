// Builds a TensorFlow GraphDef node by node, for the SavedModel export
// (lib/runtime/export/saved_model.h). Tensor names are TensorFlow's: "node" for
// a node's first output, "node:i" for output i, "^node" for a control input.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "proto/graph.pb.h"

namespace dtf::runtime {

// `text` as a node name TensorFlow accepts ([A-Za-z0-9.][A-Za-z0-9_.\-/]*):
// other characters become '_'.
std::string TfNodeName(std::string_view text);

// "node:i" (or "node" for i = 0).
std::string TfOutput(std::string_view node, int i);

class TfGraph {
 public:
  // Adds a node named `name` (TfNodeName'd, and made unique with a "_<k>"
  // suffix) and returns it; its name is node->name().
  tensorflow::NodeDef* Add(std::string_view name, std::string_view op,
                           std::vector<std::string> inputs = {});

  static void SetType(tensorflow::NodeDef* node, const std::string& key,
                      tensorflow::DataType type);
  static void SetInt(tensorflow::NodeDef* node, const std::string& key,
                     int64_t value);
  static void SetBool(tensorflow::NodeDef* node, const std::string& key,
                      bool value);
  static void SetString(tensorflow::NodeDef* node, const std::string& key,
                        std::string_view value);
  // A shape with -1 for an unknown dimension.
  static void SetShape(tensorflow::NodeDef* node, const std::string& key,
                       std::span<const int64_t> dims);
  static void SetTypeList(tensorflow::NodeDef* node, const std::string& key,
                          std::span<const tensorflow::DataType> types);
  static void SetFloatList(tensorflow::NodeDef* node, const std::string& key,
                           std::span<const float> values);

  // Constants; each returns the node's name (its output tensor).
  std::string Floats(std::string_view name, std::span<const float> values,
                     std::vector<int64_t> shape);
  std::string Int64s(std::string_view name, std::span<const int64_t> values,
                     std::vector<int64_t> shape);
  std::string Int32s(std::string_view name, std::span<const int32_t> values,
                     std::vector<int64_t> shape);
  std::string Strings(std::string_view name,
                      std::span<const std::string> values,
                      std::vector<int64_t> shape);
  std::string Float(std::string_view name, float value);
  std::string Double(std::string_view name, double value);
  std::string Int64(std::string_view name, int64_t value);
  std::string Int32(std::string_view name, int32_t value);
  std::string String(std::string_view name, std::string_view value);

  // A node of `op` whose type attribute `type_attr` is `type`; returns its
  // name.
  std::string Op(std::string_view name, std::string_view op,
                 std::vector<std::string> inputs, tensorflow::DataType type,
                 const std::string& type_attr = "T");

  // Common ops (T = `type`); each returns the output tensor.
  std::string Cast(std::string_view name, const std::string& x,
                   tensorflow::DataType from, tensorflow::DataType to);
  // GatherV2(params, indices, axis) with int64 indices.
  std::string Gather(std::string_view name, const std::string& params,
                     const std::string& indices, tensorflow::DataType type,
                     int32_t axis = 0);
  // Reshape with an int64 shape.
  std::string Reshape(std::string_view name, const std::string& x,
                      std::initializer_list<int64_t> shape,
                      tensorflow::DataType type);
  // Pack along `axis`.
  std::string Pack(std::string_view name, std::vector<std::string> values,
                   tensorflow::DataType type, int64_t axis = 0);
  // ConcatV2 along `axis`.
  std::string Concat(std::string_view name, std::vector<std::string> values,
                     tensorflow::DataType type, int32_t axis);

  tensorflow::GraphDef& graph() { return graph_; }

 private:
  tensorflow::GraphDef graph_;
  std::unordered_set<std::string> names_;
};

}  // namespace dtf::runtime
