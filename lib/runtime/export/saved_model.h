// Exports a trained model as a TensorFlow SavedModel (docs/formats/
// savedmodel.md): saved_model.pb holding one MetaGraphDef tagged "serve"
// whose graph computes, with stock TensorFlow ops, what FeatureLayer and
// Model compute (dtf predict's outputs), and variables/ in TensorFlow's
// tensor-bundle format, restored through the graph's SaverDef. Signatures:
//   serving_default  (tensorflow/serving/predict) one input per source
//                    column of the features, shape [-1], typed as the
//                    schema says (a [schema] vector: [-1, n]); a string
//                    cell that is a missing-value token (or empty) and a
//                    NaN float are missing cells.
//   classify         (tensorflow/serving/classify; classification jobs)
//   regress          (tensorflow/serving/regress; regression jobs)
//                    input "inputs": serialized tf.Example records, as
//                    `dtf gen-records` writes them.
// Date features are parsed in the graph with stock string ops (regular
// expressions and StringToNumber), as lib/data/date_parse.h parses them.
#pragma once

#include <string>

#include "lib/base/status.h"
#include "lib/data/job_file.h"
#include "lib/runtime/model/feature_layer.h"
#include "lib/runtime/model/model.h"

namespace dtf::runtime {

inline constexpr std::string_view kSavedModelDir = "saved_model";

// OK when the job can be exported: InvalidArgument when it has no model.
Status CheckSavedModelExport(const JobFile& definition);

// Writes saved_model.pb and variables/ into `dir` (created when absent).
// `definition` is the job the model was built from (its model.toml).
Status WriteSavedModel(const std::string& dir, const JobFile& definition,
                       const FeatureLayer& layer, const Model& model);

// The SavedModel of a model whose variables stay on parameter servers:
// saved_model.pb (and assets/) alone; the caller has the variables/ bundle
// written at SavedModelVariablesPrefix(dir), each table as `table_num_ps`
// parameter servers hold it (saved_model_builder.h). `model` gives the
// variables' names and whole shapes (specs()), never their values.
Status WriteSavedModelGraph(const std::string& dir, const JobFile& definition,
                            const FeatureLayer& layer, const Model& model,
                            int table_num_ps);
// "<dir>/variables/variables".
std::string SavedModelVariablesPrefix(const std::string& dir);

// WriteSavedModel into a staging directory beside `dir`, then renamed onto
// `dir` (replacing a previous export only once the new one is complete).
Status ExportSavedModel(const std::string& dir, const JobFile& definition,
                        const FeatureLayer& layer, const Model& model);

}  // namespace dtf::runtime
