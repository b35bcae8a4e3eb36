// What slurm_env_srun_test.sh runs under a real Slurm:
//   slurm_env_probe hostlist LIST
//     prints the names ExpandHostlist gives LIST, one a line (to compare
//     with `scontrol show hostnames LIST`);
//   slurm_env_probe script PS WORKERS BASE_PORT RUN_DIR [DTF JOB RUN_ID
//       [SET...]]
//     prints RenderBatchScript's script for a run whose tasks are this
//     program (`slurm_env_probe task slurm ...`), or DTF's `dtf task slurm`
//     on JOB with the --set values SET;
//   slurm_env_probe task slurm --job J --run-dir D --run-id R --ps N
//       --workers M --threads T --base-port P --gpus-per-node G
//     (SlurmTaskArgv's flags) reads this srun task's environment and prints
//     one line from MakeSlurmServeCommand: "procid=<id> name=<role:index>
//     address=<host:port> ps=<list> workers=<list> gpu=<n|-> dir=<task
//     dir>[ note=<$DTF_SLURM_PROBE_NOTE>]", the note set by the scripts
//     this program renders.
// Errors go to stderr with exit status 1.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "lib/base/strings.h"
#include "lib/launch/slurm/batch_script.h"
#include "lib/launch/slurm/hostlist.h"
#include "lib/launch/slurm/slurm_task.h"

extern char** environ;

namespace {

using dtf::launch::slurm::Environment;

Environment ProcessEnvironment() {
  Environment env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const size_t eq = entry.find('=');
    if (eq != std::string::npos)
      env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return env;
}

// The value after "--<flag>" in argv.
std::string FlagValue(const std::vector<std::string>& argv,
                      std::string_view flag) {
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == flag) return argv[i + 1];
  }
  return "";
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "slurm_env_probe: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using dtf::launch::slurm::SlurmRunSpec;
  const std::vector<std::string> args(argv + 1, argv + argc);
  const std::string mode = args.empty() ? "" : args[0];
  if (mode == "hostlist" && args.size() == 2) {
    auto hosts = dtf::launch::slurm::ExpandHostlist(args[1]);
    if (!hosts.ok()) return Fail(std::string(dtf::Message(hosts.status())));
    for (const std::string& h : *hosts) std::printf("%s\n", h.c_str());
    return 0;
  }
  SlurmRunSpec spec;
  spec.binary = std::filesystem::canonical("/proc/self/exe").string();
  spec.job = "/shared/job/dtf.toml";
  spec.run_id = "r1";
  if (mode == "script" && args.size() >= 5) {
    spec.ps = std::atoi(args[1].c_str());
    spec.workers = std::atoi(args[2].c_str());
    spec.base_port = std::atoi(args[3].c_str());
    spec.run_dir = args[4];
    spec.env = {{"DTF_SLURM_PROBE_NOTE", "a b'c"}};
    if (args.size() >= 8) {
      spec.binary = args[5];
      spec.job = args[6];
      spec.run_id = args[7];
      spec.sets.assign(args.begin() + 8, args.end());
    }
    auto script = dtf::launch::slurm::RenderBatchScript({}, spec);
    if (!script.ok()) return Fail(std::string(dtf::Message(script.status())));
    std::printf("%s", script->c_str());
    return 0;
  }
  if (mode != "task" || args.size() < 2 || args[1] != "slurm") {
    return Fail(
        "usage: slurm_env_probe hostlist LIST | script PS WORKERS BASE_PORT "
        "RUN_DIR [DTF JOB RUN_ID [SET...]] | task slurm FLAGS...");
  }
  spec.job = FlagValue(args, "--job");
  spec.run_dir = FlagValue(args, "--run-dir");
  spec.run_id = FlagValue(args, "--run-id");
  spec.ps = std::atoi(FlagValue(args, "--ps").c_str());
  spec.workers = std::atoi(FlagValue(args, "--workers").c_str());
  spec.threads = std::atoi(FlagValue(args, "--threads").c_str());
  spec.base_port = std::atoi(FlagValue(args, "--base-port").c_str());
  spec.gpus_per_node = std::atoi(FlagValue(args, "--gpus-per-node").c_str());
  const Environment env = ProcessEnvironment();
  auto command = dtf::launch::slurm::MakeSlurmServeCommand(spec, env);
  if (!command.ok()) return Fail(std::string(dtf::Message(command.status())));
  const auto& slot = command->slot;
  auto note = env.find("DTF_SLURM_PROBE_NOTE");
  std::printf(
      "procid=%s name=%s address=%s ps=%s workers=%s gpu=%s dir=%s%s%s\n",
      env.at("SLURM_PROCID").c_str(), slot.name().c_str(),
      slot.address().c_str(), FlagValue(command->argv, "--ps").c_str(),
      FlagValue(command->argv, "--workers").c_str(),
      slot.gpu ? std::to_string(*slot.gpu).c_str() : "-", command->dir.c_str(),
      note == env.end() ? "" : " note=",
      note == env.end() ? "" : note->second.c_str());
  return 0;
}
