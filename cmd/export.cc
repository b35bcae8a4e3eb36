// dtf export: write an exported model in another format (a TensorFlow
// SavedModel).
#include <memory>
#include <string>

#include "cmd/app.h"
#include "cmd/flags.h"
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
  DTF_ASSIGN_OR_RETURN(runtime::LoadedModel loaded,
                       runtime::LoadExportedModel(f.model));
  DTF_RETURN_IF_ERROR(runtime::ExportSavedModel(f.output, loaded.definition,
                                                loaded.layer, *loaded.model));
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
