#include "lib/launch/pack/elf_file.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "lib/base/strings.h"

namespace dtf::pack {
namespace {

// An open file read with pread; closes on destruction.
class File {
 public:
  File(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  ~File() { ::close(fd_); }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  uint64_t size() const { return size_; }

  // `n` bytes at `offset`; DataLoss when they lie beyond the end.
  StatusOr<std::string> Read(uint64_t offset, uint64_t n,
                             std::string_view what) const {
    if (offset > size_ || n > size_ - offset) {
      return DataLossError(StrCat(path_, ": ", what, " (", n, " bytes at ",
                                  offset, ") lies beyond the end of the file (",
                                  size_, " bytes)"));
    }
    std::string out(n, '\0');
    uint64_t done = 0;
    while (done < n) {
      const ssize_t r =
          ::pread(fd_, out.data() + done, n - done, offset + done);
      if (r < 0) {
        if (errno == EINTR) continue;
        return ErrnoToStatus(errno, path_);
      }
      if (r == 0) {
        return DataLossError(StrCat(path_, ": truncated while reading ", what));
      }
      done += static_cast<uint64_t>(r);
    }
    return out;
  }

 private:
  std::string path_;
  int fd_;
  uint64_t size_;
};

template <typename T>
T Load(const std::string& bytes, size_t at = 0) {
  T value;
  std::memcpy(&value, bytes.data() + at, sizeof(T));
  return value;
}

std::vector<std::string> SplitPath(std::string_view list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(':', start);
    if (end == std::string_view::npos) end = list.size();
    if (end > start) out.emplace_back(list.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// The ELF layouts of one class.
struct Elf32Types {
  using Ehdr = Elf32_Ehdr;
  using Phdr = Elf32_Phdr;
  using Dyn = Elf32_Dyn;
};
struct Elf64Types {
  using Ehdr = Elf64_Ehdr;
  using Phdr = Elf64_Phdr;
  using Dyn = Elf64_Dyn;
};

// The dynamic section's entries that ReadClass reports: offsets in the
// dynamic string table of the names, and where that table and the version
// needs lie.
struct DynamicEntries {
  uint64_t strtab = 0, strsz = 0, verneed = 0, verneednum = 0;
  std::vector<uint64_t> needed, rpath, runpath;
  uint64_t soname = 0;
  bool has_soname = false;

  bool Empty() const {
    return needed.empty() && rpath.empty() && runpath.empty() && !has_soname &&
           verneednum == 0;
  }
};

template <typename Dyn>
DynamicEntries ParseDynamic(const std::string& dyn_bytes) {
  DynamicEntries e;
  for (size_t at = 0; at + sizeof(Dyn) <= dyn_bytes.size(); at += sizeof(Dyn)) {
    const Dyn d = Load<Dyn>(dyn_bytes, at);
    if (d.d_tag == DT_NULL) break;
    const uint64_t v = d.d_un.d_val;
    switch (d.d_tag) {
      case DT_STRTAB:
        e.strtab = v;
        break;
      case DT_STRSZ:
        e.strsz = v;
        break;
      case DT_NEEDED:
        e.needed.push_back(v);
        break;
      case DT_RPATH:
        e.rpath.push_back(v);
        break;
      case DT_RUNPATH:
        e.runpath.push_back(v);
        break;
      case DT_SONAME:
        e.soname = v;
        e.has_soname = true;
        break;
      case DT_VERNEED:
        e.verneed = v;
        break;
      case DT_VERNEEDNUM:
        e.verneednum = v;
        break;
      default:
        break;
    }
  }
  return e;
}

// A virtual address of the dynamic section's pointers -> a file offset,
// through the loaded segments `loads`.
template <typename Phdr>
StatusOr<uint64_t> OffsetOf(const std::string& path,
                            const std::vector<Phdr>& loads, uint64_t vaddr,
                            std::string_view what) {
  for (const Phdr& p : loads) {
    if (vaddr >= p.p_vaddr && vaddr < p.p_vaddr + p.p_filesz) {
      return p.p_offset + (vaddr - p.p_vaddr);
    }
  }
  return DataLossError(StrCat(path, ": ", what, " address 0x",
                              fmt::format("{:x}", vaddr),
                              " is in no loaded segment"));
}

// The string at offset `at` of the dynamic string table `strings`.
StatusOr<std::string> StringAt(const std::string& path,
                               const std::string& strings, uint64_t at) {
  if (at >= strings.size()) {
    return DataLossError(StrCat(path, ": string offset ", at,
                                " beyond DT_STRSZ (", strings.size(), ")"));
  }
  const size_t end = strings.find('\0', at);
  if (end == std::string::npos) {
    return DataLossError(StrCat(path, ": unterminated dynamic string at ", at));
  }
  return strings.substr(at, end - at);
}

// DT_NEEDED, DT_RPATH, DT_RUNPATH and DT_SONAME, read from `strings`.
Status ReadDynamicNames(const std::string& path, const DynamicEntries& d,
                        const std::string& strings, ElfFile* elf) {
  for (uint64_t at : d.needed) {
    DTF_ASSIGN_OR_RETURN(std::string name, StringAt(path, strings, at));
    elf->needed.push_back(std::move(name));
  }
  for (uint64_t at : d.rpath) {
    DTF_ASSIGN_OR_RETURN(const std::string list, StringAt(path, strings, at));
    for (std::string& dir : SplitPath(list)) elf->rpath.push_back(dir);
  }
  for (uint64_t at : d.runpath) {
    DTF_ASSIGN_OR_RETURN(const std::string list, StringAt(path, strings, at));
    for (std::string& dir : SplitPath(list)) elf->runpath.push_back(dir);
  }
  elf->has_runpath = !d.runpath.empty();
  if (d.has_soname) {
    DTF_ASSIGN_OR_RETURN(elf->soname, StringAt(path, strings, d.soname));
  }
  return OkStatus();
}

// .gnu.version_r, `count` records from file offset `at`: a chain of Verneed
// records, each with a chain of Vernaux records. Elf32 and Elf64 share the
// layout.
Status ReadVersionNeeds(const std::string& path, const File& file, uint64_t at,
                        uint64_t count, const std::string& strings,
                        ElfFile* elf) {
  for (uint64_t i = 0; i < count; ++i) {
    DTF_ASSIGN_OR_RETURN(
        const std::string vn_bytes,
        file.Read(at, sizeof(Elf64_Verneed), "a DT_VERNEED entry"));
    const Elf64_Verneed vn = Load<Elf64_Verneed>(vn_bytes);
    ElfFile::VersionNeed need;
    DTF_ASSIGN_OR_RETURN(need.file, StringAt(path, strings, vn.vn_file));
    uint64_t aux_at = at + vn.vn_aux;
    for (unsigned j = 0; j < vn.vn_cnt; ++j) {
      DTF_ASSIGN_OR_RETURN(
          const std::string aux_bytes,
          file.Read(aux_at, sizeof(Elf64_Vernaux), "a DT_VERNEED aux entry"));
      const Elf64_Vernaux aux = Load<Elf64_Vernaux>(aux_bytes);
      DTF_ASSIGN_OR_RETURN(std::string name,
                           StringAt(path, strings, aux.vna_name));
      need.versions.push_back(std::move(name));
      if (aux.vna_next == 0) break;
      aux_at += aux.vna_next;
    }
    elf->version_needs.push_back(std::move(need));
    if (vn.vn_next == 0) break;
    at += vn.vn_next;
  }
  return OkStatus();
}

template <typename Types>
StatusOr<ElfFile> ReadClass(const std::string& path, const File& file) {
  using Ehdr = typename Types::Ehdr;
  using Phdr = typename Types::Phdr;
  using Dyn = typename Types::Dyn;
  ElfFile elf;
  DTF_ASSIGN_OR_RETURN(const std::string header,
                       file.Read(0, sizeof(Ehdr), "the ELF header"));
  const Ehdr ehdr = Load<Ehdr>(header);
  elf.elf_class = header[EI_CLASS];
  elf.machine = ehdr.e_machine;
  if (ehdr.e_phnum > 0 && ehdr.e_phentsize != sizeof(Phdr)) {
    return DataLossError(StrCat(path, ": program header entries of ",
                                ehdr.e_phentsize, " bytes, expected ",
                                sizeof(Phdr)));
  }
  DTF_ASSIGN_OR_RETURN(
      const std::string phdrs,
      file.Read(ehdr.e_phoff, uint64_t{ehdr.e_phnum} * sizeof(Phdr),
                "the program headers"));
  std::vector<Phdr> loads;
  const Phdr* dynamic = nullptr;
  std::vector<Phdr> all(ehdr.e_phnum);
  for (size_t i = 0; i < all.size(); ++i) {
    all[i] = Load<Phdr>(phdrs, i * sizeof(Phdr));
  }
  for (const Phdr& p : all) {
    if (p.p_type == PT_LOAD) loads.push_back(p);
    if (p.p_type == PT_DYNAMIC) dynamic = &p;
    if (p.p_type == PT_INTERP && p.p_filesz > 0) {
      DTF_ASSIGN_OR_RETURN(std::string interp,
                           file.Read(p.p_offset, p.p_filesz, "PT_INTERP"));
      elf.interpreter = std::string(interp.c_str());
    }
  }
  if (dynamic == nullptr) return elf;  // statically linked

  DTF_ASSIGN_OR_RETURN(
      const std::string dyn_bytes,
      file.Read(dynamic->p_offset, dynamic->p_filesz, "PT_DYNAMIC"));
  const DynamicEntries d = ParseDynamic<Dyn>(dyn_bytes);
  if (d.Empty()) return elf;
  if (d.strtab == 0) {
    return DataLossError(StrCat(path, ": dynamic section has no DT_STRTAB"));
  }
  DTF_ASSIGN_OR_RETURN(const uint64_t strtab_offset,
                       OffsetOf(path, loads, d.strtab, "DT_STRTAB"));
  DTF_ASSIGN_OR_RETURN(
      const std::string strings,
      file.Read(strtab_offset, d.strsz, "the dynamic strings"));
  DTF_RETURN_IF_ERROR(ReadDynamicNames(path, d, strings, &elf));
  if (d.verneed != 0 && d.verneednum > 0) {
    DTF_ASSIGN_OR_RETURN(const uint64_t at,
                         OffsetOf(path, loads, d.verneed, "DT_VERNEED"));
    DTF_RETURN_IF_ERROR(
        ReadVersionNeeds(path, file, at, d.verneednum, strings, &elf));
  }
  return elf;
}

}  // namespace

StatusOr<ElfFile> ReadElfFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return ErrnoToStatus(e, path);
  }
  File file(path, fd, static_cast<uint64_t>(st.st_size));
  if (!S_ISREG(st.st_mode) || file.size() < EI_NIDENT) {
    return InvalidArgumentError(StrCat(path, ": not an ELF file"));
  }
  DTF_ASSIGN_OR_RETURN(const std::string ident,
                       file.Read(0, EI_NIDENT, "the ELF identification"));
  if (std::memcmp(ident.data(), ELFMAG, SELFMAG) != 0) {
    return InvalidArgumentError(StrCat(path, ": not an ELF file"));
  }
  const int host_data =
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
      ELFDATA2LSB;
#else
      ELFDATA2MSB;
#endif
  if (ident[EI_DATA] != host_data) {
    return InvalidArgumentError(
        StrCat(path, ": an ELF file of the other byte order than this host"));
  }
  switch (ident[EI_CLASS]) {
    case ELFCLASS32:
      return ReadClass<Elf32Types>(path, file);
    case ELFCLASS64:
      return ReadClass<Elf64Types>(path, file);
    default:
      return InvalidArgumentError(
          StrCat(path, ": unknown ELF class ", int{ident[EI_CLASS]}));
  }
}

std::string MachineName(uint16_t machine) {
  switch (machine) {
    case EM_X86_64:
      return "x86_64";
    case EM_386:
      return "i386";
    case EM_AARCH64:
      return "aarch64";
    case EM_ARM:
      return "arm";
    case EM_PPC64:
      return "ppc64";
    case EM_RISCV:
      return "riscv";
    case EM_S390:
      return "s390";
    default:
      return StrCat("machine-", machine);
  }
}

}  // namespace dtf::pack
