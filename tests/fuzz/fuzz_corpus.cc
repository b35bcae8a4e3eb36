// Writes the checked-in seed corpora of the fuzz targets that read dtf's
// own files (tests/fuzz/corpus/<target>/), made from the repository's
// examples and test data by dtf's own writers:
//   pack_unpack_fuzz/    job archives of examples/*/dtf.toml (PackJob), raw
//                        and as entry lists (pack_unpack_fuzz's format)
//   pack_manifest_fuzz/  their manifest.json, and an env archive's
//   bundle_fuzz/         a bundle as a checkpoint holds one
//   job_file_fuzz/       examples/*/dtf.toml and their model definitions
//   profile_fuzz/        profiles/local.toml, an SSH and a Slurm profile
//   hostfile_fuzz/       tests/launch/testdata/cluster.hosts, Horovod's form
//   hostlist_fuzz/       Slurm host lists
//   decompress_fuzz/     examples/titanic/dtf.toml gzip- and zlib-compressed
//
//   fuzz_corpus SOURCE_DIR OUT
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "lib/base/file.h"
#include "lib/base/status.h"
#include "lib/data/compression.h"
#include "lib/data/job_file.h"
#include "lib/data/job_toml.h"
#include "lib/launch/pack/manifest.h"
#include "lib/launch/pack/pack_job.h"
#include "lib/launch/pack/zip_format.h"
#include "lib/runtime/checkpoint/bundle.h"

namespace dtf {
namespace {

namespace fs = std::filesystem;

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void Write(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out.flush()) {
    std::fprintf(stderr, "fuzz_corpus: cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

template <typename T>
T Must(StatusOr<T> v) {
  if (!v.ok()) {
    std::fprintf(stderr, "fuzz_corpus: %s\n", v.status().ToString().c_str());
    std::exit(1);
  }
  return *std::move(v);
}

std::string Compress(const std::string& bytes, Compression c) {
  std::string out;
  auto file =
      Must(NewCompressedWritableFile(NewStringWritableFile(&out, "seed"), c));
  if (!file->Append(bytes).ok() || !file->Close().ok()) std::exit(1);
  return out;
}

void PackSeeds(const std::string& src, const std::string& out,
               const std::string& tmp) {
  for (const char* example : {"titanic", "census"}) {
    const std::string job_dir = tmp + "/" + example;
    fs::create_directories(job_dir);
    fs::copy_file(src + "/examples/" + example + "/dtf.toml",
                  job_dir + "/dtf.toml", fs::copy_options::overwrite_existing);
    pack::PackJobOptions options;
    options.job = job_dir + "/dtf.toml";
    options.dtf_version = "0.1.0";
    options.out_dir = tmp + "/out-" + example;
    const pack::PackResult packed = Must(pack::PackJob(options));
    Write(out + "/pack_unpack_fuzz/" + example + ".seed",
          std::string(1, '\0') + Read(packed.archive.path));
    Write(out + "/pack_manifest_fuzz/" + example + ".json",
          pack::ManifestToJson(packed.manifest));
  }
  // Entry lists: mode bit and name, one a line; then spoiled as byte 0 says.
  const std::string entries =
      "0dtf.toml\n1bin/run\n0vocab/sex.txt\n0data/train.csv\n";
  const struct {
    const char* name;
    char flags;
  } kLists[] = {{"entries", 1},
                {"entries-unlisted", 3},
                {"entries-digest", 5},
                {"entries-mode", 9},
                {"entries-missing", 17}};
  for (const auto& list : kLists) {
    Write(out + "/pack_unpack_fuzz/" + list.name + ".seed",
          std::string(1, list.flags) + entries);
  }
  Write(out + "/pack_unpack_fuzz/entries-file-and-dir.seed",
        std::string(1, '\1') + "0a\n0a/b\n");
  pack::Manifest env;
  env.kind = pack::kKindEnv;
  env.dtf_version = "0.1.0";
  env.arch = "x86_64";
  env.glibc = "2.34";
  env.entry = "bin/dtf";
  env.files = {
      {"bin/dtf", 120, std::string(64, 'a'), pack::kModeExecutable},
      {"lib/libz.so.1", 100000, std::string(64, 'b'), pack::kModeFile},
      {"libexec/dtf", 5000000, std::string(64, 'c'), pack::kModeExecutable}};
  Write(out + "/pack_manifest_fuzz/env.json", pack::ManifestToJson(env));
}

void BundleSeeds(const std::string& out) {
  runtime::Bundle b;
  b.AddTensor("dense_0/kernel", kernels::Tensor::FromValues(
                                    {3, 2}, {0.5f, -1.f, 2.f, 0.f, 1.5f, 3.f}));
  b.AddFloats("dense_0/bias", std::vector<float>{0.25f, -0.25f});
  b.AddInt64s("global_step", std::vector<int64_t>{1200});
  b.AddString("model.toml", "[model]\ntype = \"linear\"\n");
  const std::string bytes = b.Serialize();
  Write(out + "/bundle_fuzz/checkpoint.seed", std::string(1, '\0') + bytes);
  Write(out + "/bundle_fuzz/checkpoint-fix-crc.seed",
        std::string(1, '\1') + bytes);
  Write(out + "/bundle_fuzz/empty.seed",
        std::string(1, '\1') + runtime::Bundle().Serialize());
}

void TextSeeds(const std::string& src, const std::string& out,
               const std::string& tmp) {
  for (const char* example : {"titanic", "census"}) {
    const std::string path = src + "/examples/" + example + "/dtf.toml";
    const std::string text = Read(path);
    Write(out + "/job_file_fuzz/" + example + ".toml", text);
    const JobFile job = Must(ParseJobFile(text, tmp + "/job/dtf.toml"));
    if (job.model) {
      Write(out + "/job_file_fuzz/" + example + "-model.toml",
            ModelDefinitionToToml(job));
    }
  }
  Write(out + "/profile_fuzz/local.toml", Read(src + "/profiles/local.toml"));
  Write(out + "/profile_fuzz/ssh.toml",
        "backend = \"ssh\"\n"
        "hosts = [\"h1 slots=2\", \"h2:3 ps=false user=bob port=2200\"]\n"
        "ps = 2\nworkers = 5\nwork_dir = \"/scratch/{host}/dtf/\"\n"
        "with_data = true\nbase_port = 7000\nmax_restarts = 2\n"
        "device = \"cuda:1\"\n"
        "[ssh]\nuser = \"ada\"\nport = 2222\n"
        "identity_file = \"~/keys/id_ed25519\"\n"
        "known_hosts = \"/etc/dtf/known_hosts\"\nconfig = \"none\"\n"
        "connect_timeout = 3\nkeepalive = 0\nreconnect_timeout = 5\n"
        "[env]\nOMP_NUM_THREADS = \"1\"\n");
  Write(out + "/profile_fuzz/hostfile.toml",
        "backend = \"ssh\"\nhostfile = \"cluster.hosts\"\n");
  Write(out + "/profile_fuzz/slurm.toml",
        "backend = \"slurm\"\nps = 2\n[slurm]\npartition = \"gpu\"\n"
        "time_limit = \"1-12:00:00\"\nnodes = 2\n"
        "sbatch_args = [\"--qos=high\"]\nbase_port = 31000\n"
        "run_dir = \"runs\"\n");
  Write(out + "/hostlist_fuzz/padded.list", "node[01-04]");
  Write(out + "/hostlist_fuzz/ranges.list", "n[1-3,7,10-12]");
  Write(out + "/hostlist_fuzz/prefixes.list", "a[1-2],b3,c[08-10]");
  Write(out + "/hostlist_fuzz/groups.list", "rack[1-2]-gpu r[1-2]n[001-2]");
  Write(out + "/hostfile_fuzz/cluster.hosts",
        Read(src + "/tests/launch/testdata/cluster.hosts"));
  Write(out + "/hostfile_fuzz/horovod.hosts",
        "# Horovod and OpenMPI forms\nnode-1:4\nnode-2 max_slots=2\n"
        "10.0.0.3 slots=8 gpus=8 ps=false\n[::1] slots=2 port=22\n");
  const std::string job = Read(src + "/examples/titanic/dtf.toml");
  Write(out + "/decompress_fuzz/titanic.gz",
        std::string(1, '\0') + Compress(job, Compression::kGzip));
  Write(out + "/decompress_fuzz/titanic-two-members.gz",
        std::string(1, '\x40') +
            Compress(job.substr(0, 200), Compression::kGzip) +
            Compress(job.substr(200, 300), Compression::kGzip));
  Write(out + "/decompress_fuzz/titanic.zz",
        std::string(1, '\1') + Compress(job, Compression::kZlib));
}

int Main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: fuzz_corpus SOURCE_DIR OUT\n");
    return 2;
  }
  std::string tmp = (fs::temp_directory_path() / "dtf_fuzz_corpus.XXXXXX");
  if (::mkdtemp(tmp.data()) == nullptr) return 1;
  PackSeeds(argv[1], argv[2], tmp);
  BundleSeeds(argv[2]);
  TextSeeds(argv[1], argv[2], tmp);
  std::error_code ec;
  fs::remove_all(tmp, ec);
  return 0;
}

}  // namespace
}  // namespace dtf

int main(int argc, char** argv) { return dtf::Main(argc, argv); }
