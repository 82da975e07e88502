#include "bert/common/fs.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "bert/common/error.h"

namespace bert {

std::string read_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw UserError("file not found: " + path.string());
  if (fs::is_directory(path, ec)) throw UserError("expected a file but got a directory: " + path.string());
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError("cannot read " + path.string() + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path temp_path_for(const fs::path& path) {
  return fs::path(path.string() + ".tmp." + std::to_string(::getpid()));
}

static void fsync_path(const fs::path& p, bool dir) {
  int fd = ::open(p.c_str(), dir ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

void commit_temp(const fs::path& tmp, const fs::path& final_path) {
  fsync_path(tmp, fs::is_directory(tmp));
  std::error_code ec;
  fs::rename(tmp, final_path, ec);
  if (ec) throw RuntimeError("cannot rename " + tmp.string() + " to " + final_path.string() + ": " + ec.message());
  fs::path parent = final_path.parent_path();
  if (parent.empty()) parent = ".";
  fsync_path(parent, true);
}

void write_file_atomic(const fs::path& path, std::string_view data) {
  if (path.has_parent_path()) ensure_writable_dir(path.parent_path());
  fs::path tmp = temp_path_for(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw UserError("cannot write " + tmp.string() + ": " + std::strerror(errno));
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw RuntimeError("write failed for " + path.string() + " (disk full?)");
    }
  }
  commit_temp(tmp, path);
}

void ensure_writable_dir(const fs::path& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw UserError("cannot create directory " + dir.string() + ": " +
                    (ec ? ec.message() : std::string("a file with that name exists")) +
                    "; choose another --output-dir");
  if (::access(dir.c_str(), W_OK) != 0)
    throw UserError("directory is not writable: " + dir.string() + "; choose another --output-dir");
}

void require_file(const fs::path& path, std::string_view what) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw UserError(std::string(what) + " not found: " + path.string());
}

}  // namespace bert
