// dtf export: write an exported model in another format (a TensorFlow
// SavedModel).
#include <filesystem>
#include <memory>
#include <string>

#include "cmd/app.h"
#include "cmd/flags.h"
#include "cmd/remote_output.h"
#include "lib/base/file.h"
#include "lib/base/storage.h"
#include "lib/base/storage_tree.h"
#include "lib/base/strings.h"
#include "lib/runtime/export/exported_model.h"
#include "lib/runtime/export/saved_model.h"

namespace dtf::cli {
namespace {

struct ExportFlags {
  std::string model;
  std::string format = "savedmodel";
  std::string output;
};

Status RunExport(const ExportFlags& f, Context* ctx) {
  LocalStagingDir model_copy;
  DTF_ASSIGN_OR_RETURN(const std::string model,
                       LocalModelDir("--model", f.model, &model_copy));
  DTF_ASSIGN_OR_RETURN(runtime::LoadedModel loaded,
                       runtime::LoadExportedModel(model));
  // An output in a bucket is written locally, then uploaded file by file.
  LocalStagingDir staging;
  std::string output = f.output;
  if (IsRemotePath(f.output)) {
    DTF_ASSIGN_OR_RETURN(staging, LocalStagingDir::Create("export"));
    output = JoinPath(staging.path(), "saved_model");
  }
  if (loaded.rows != nullptr) {
    // A sharded run's export already holds its SavedModel, whose tables
    // are never loaded whole: copied as it is.
    const std::string from = JoinPath(model, runtime::kSavedModelDir);
    DTF_RETURN_IF_ERROR(
        ReplaceDirectory(output, [&](const std::string& to) -> Status {
          std::error_code ec;
          std::filesystem::copy(from, to,
                                std::filesystem::copy_options::recursive, ec);
          if (ec) {
            return ErrnoToStatus(ec.value(),
                                 StrCat("cannot copy ", from, " to ", to));
          }
          return OkStatus();
        }));
  } else {
    DTF_RETURN_IF_ERROR(runtime::ExportSavedModel(output, loaded.definition,
                                                  loaded.layer, *loaded.model));
  }
  if (!staging.path().empty()) {
    // saved_model.pb last: a loader finds it only once what it names is there.
    DTF_RETURN_IF_ERROR(
        UploadTree(output, f.output,
                   [](const std::string& a, const std::string& b) {
                     return a != "saved_model.pb" && b == "saved_model.pb";
                   })
            .status());
  }
  ctx->console.Info(StrCat("wrote a TensorFlow SavedModel to ", f.output));
  return OkStatus();
}

}  // namespace

void SetupExport(CLI::App* app, Context* ctx) {
  auto f = std::make_shared<ExportFlags>();
  CLI::App* sub = app->add_subcommand(
      "export", "Write a model exported by `dtf train` in another format");
  sub->add_option("--model", f->model,
                  "The exported model directory (<output_dir>/model)")
      ->required();
  sub->add_option("--format", f->format,
                  "savedmodel (default): a TensorFlow SavedModel")
      ->check(CLI::IsMember({"savedmodel"}));
  sub->add_option("--output", f->output,
                  "The directory to write (replaced once the new one is "
                  "complete)")
      ->required();
  sub->callback([f, ctx] { ctx->status = RunExport(*f, ctx); });
}

}  // namespace dtf::cli
