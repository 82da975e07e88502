#include "bert/device/system_info.h"

#include <ATen/Version.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <link.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "bert/build_info.h"
#include "bert/common/strings.h"
#include "bert/device/compat.h"
#include "bert/device/device.h"

#ifdef BERT_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

namespace bert {

namespace {

// The BLAS library actually loaded into this process (Debian switches libblas.so.3 through
// alternatives; the reference BLAS is ~20x slower than OpenBLAS).
std::string loaded_blas() {
  std::string found;
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) {
        std::string name = info->dlpi_name ? info->dlpi_name : "";
        auto* out = static_cast<std::string*>(data);
        if (name.find("libblas") != std::string::npos || name.find("openblas") != std::string::npos ||
            name.find("libmkl") != std::string::npos) {
          std::error_code ec;
          auto real = std::filesystem::canonical(name, ec);
          std::string r = ec ? name : real.string();
          if (out->find(r) == std::string::npos) *out += (out->empty() ? "" : ", ") + r;
        }
        return 0;
      },
      &found);
  return found.empty() ? "none loaded" : found;
}

std::string config_value(const std::string& cfg, const std::string& key) {
  auto pos = cfg.find(key + "=");
  if (pos == std::string::npos) return "";
  auto end = cfg.find_first_of(",\n", pos);
  return trim(cfg.substr(pos + key.size() + 1, end == std::string::npos ? std::string::npos : end - pos - key.size() - 1));
}

}  // namespace

config::json system_info() {
  using config::json;
  json j;
  j["version"] = BERT_VERSION;
  j["build"] = {{"type", BERT_BUILD_TYPE}, {"compiler", BERT_COMPILER}};
  std::string cfg = at::show_config();
  j["libtorch"] = {{"version", compat::torch_version()},
                   {"cmake_dir", BERT_TORCH_DIR},
                   {"cuda_build", torch::cuda::is_available() || cfg.find("USE_CUDA=ON") != std::string::npos ||
                                      cfg.find("USE_CUDA=1") != std::string::npos},
                   {"blas_info", config_value(cfg, "BLAS_INFO")},
                   {"lapack_info", config_value(cfg, "LAPACK_INFO")},
                   {"cxx_flags", config_value(cfg, "CXX_FLAGS")},
                   {"mkldnn", at::hasMKLDNN()},
                   {"mkldnn_version", at::hasMKLDNN() ? at::get_mkldnn_version() : ""},
                   {"openmp", at::get_openmp_version()},
                   {"sdpa", compat::kHasSDPA}};
  {
    const auto& hooks = at::detail::getCUDAHooks();
    bool has_cuda = false;
    try {
      has_cuda = hooks.hasCUDA();
    } catch (...) {
    }
    j["cuda"] = {{"available", has_cuda},
                 {"cudnn", has_cuda && hooks.hasCuDNN() ? std::to_string(hooks.versionCuDNN()) : "none"}};
  }
  j["blas_loaded"] = loaded_blas();
#ifdef BERT_HAVE_DNNL
  const dnnl_version_t* v = dnnl_version();
  j["onednn"] = std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
#else
  j["onednn"] = "not linked";
#endif
  CpuFeatures f = cpu_features();
  j["cpu"] = {{"model", f.model},
              {"logical_cores", f.logical_cores},
              {"mhz", f.mhz},
              {"avx2", f.avx2},
              {"avx512f", f.avx512f},
              {"avx512_bf16", f.avx512_bf16},
              {"avx512_fp16", f.avx512_fp16},
              {"amx_bf16", f.amx_bf16},
              {"amx_tile", f.amx_tile},
              {"dnnl_max_cpu_isa", f.dnnl_max_cpu_isa},
              {"bf16_native", f.bf16_native()}};
  j["threads"] = torch::get_num_threads();
  json backends = json::array();
  for (auto& d : all_devices()) {
    auto a = d->availability();
    backends.push_back({{"name", d->name()},
                        {"available", a.ok},
                        {"detail", a.detail},
                        {"precisions", d->precisions()},
                        {"collective", d->collective_backend()}});
  }
  j["backends"] = backends;
  return j;
}

std::string system_info_text(const config::json& j) {
  std::ostringstream ss;
  auto row = [&](const std::string& k, const std::string& v) {
    ss << "  " << k << std::string(k.size() < 18 ? 18 - k.size() : 1, ' ') << v << "\n";
  };
  auto yn = [](bool b) { return std::string(b ? "yes" : "no"); };
  ss << "bert-train " << j["version"].get<std::string>() << " (" << j["build"]["type"].get<std::string>()
     << ", " << j["build"]["compiler"].get<std::string>() << ")\n";
  ss << "LibTorch\n";
  row("version", j["libtorch"]["version"].get<std::string>());
  row("from", j["libtorch"]["cmake_dir"].get<std::string>());
  row("CUDA build", yn(j["libtorch"]["cuda_build"].get<bool>()));
  row("CUDA runtime", yn(j["cuda"]["available"].get<bool>()));
  row("cuDNN", j["cuda"]["cudnn"].get<std::string>());
  row("oneDNN (mkldnn)", j["libtorch"]["mkldnn_version"].get<std::string>());
  row("oneDNN (system)", j["onednn"].get<std::string>());
  row("BLAS (build)", j["libtorch"]["blas_info"].get<std::string>());
  row("BLAS (loaded)", j["blas_loaded"].get<std::string>());
  row("OpenMP", j["libtorch"]["openmp"].get<std::string>());
  row("fused SDPA", yn(j["libtorch"]["sdpa"].get<bool>()));
  ss << "CPU\n";
  row("model", j["cpu"]["model"].get<std::string>());
  row("logical cores", std::to_string(j["cpu"]["logical_cores"].get<int>()));
  row("threads", std::to_string(j["threads"].get<int>()));
  std::string isa;
  for (const char* k : {"avx2", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_tile"})
    if (j["cpu"][k].get<bool>()) isa += std::string(isa.empty() ? "" : " ") + k;
  row("ISA", isa.empty() ? "baseline" : isa);
  if (!j["cpu"]["dnnl_max_cpu_isa"].get<std::string>().empty())
    row("DNNL_MAX_CPU_ISA", j["cpu"]["dnnl_max_cpu_isa"].get<std::string>());
  row("native bf16", yn(j["cpu"]["bf16_native"].get<bool>()));
  ss << "Backends\n";
  for (const auto& b : j["backends"]) {
    row(b["name"].get<std::string>(),
        std::string(b["available"].get<bool>() ? "available: " : "unavailable: ") + b["detail"].get<std::string>());
  }
  return ss.str();
}

}  // namespace bert
