#pragma once
// File helpers. Every output goes through write_file_atomic (or an AtomicFile):
// data is written to "<path>.tmp.<pid>", flushed, then renamed over <path>, so a crash
// mid-write never leaves a half-written file under the final name.
#include <filesystem>
#include <string>
#include <string_view>

namespace bert {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path);  // UserError if missing/unreadable
void write_file_atomic(const fs::path& path, std::string_view data);
// The temporary name used for `path` by this process (for writers that need a path, e.g. HDF5).
fs::path temp_path_for(const fs::path& path);
// Rename tmp -> final after flushing; parent directory fsync'd.
void commit_temp(const fs::path& tmp, const fs::path& final_path);
// Create a directory (and parents); UserError naming the path if it cannot be created/written.
void ensure_writable_dir(const fs::path& dir);
// UserError "<what> not found: <path>" when the file does not exist.
void require_file(const fs::path& path, std::string_view what);

}  // namespace bert
