# Every external dependency is found here; the rest of the build uses
# BERT_DEP_LIBRARIES / BERT_DEP_DEFINITIONS.

# LibTorch: Debian's libtorch-dev by default; any LibTorch 2.x (pip torch's
# torch.utils.cmake_prefix_path, or the release zip) through CMAKE_PREFIX_PATH.
find_package(Torch REQUIRED)
set(BERT_TORCH_HAS_CUDA OFF)
if(TORCH_CUDA_LIBRARIES OR CAFFE2_USE_CUDA OR USE_CUDA)
  set(BERT_TORCH_HAS_CUDA ON)
endif()
if(NOT DEFINED Torch_VERSION)
  set(Torch_VERSION "unknown")
endif()
if(BERT_TORCH_HAS_CUDA)
  set(BERT_CUDA_DEFINITION BERT_WITH_CUDA=1)
endif()
message(STATUS "bert-train: LibTorch ${Torch_VERSION} from ${Torch_DIR} (CUDA: ${BERT_TORCH_HAS_CUDA})")

find_package(CLI11 CONFIG REQUIRED)
find_package(spdlog CONFIG REQUIRED)
find_package(nlohmann_json CONFIG REQUIRED)
find_package(HDF5 REQUIRED COMPONENTS C)
find_package(dnnl CONFIG QUIET)
find_package(Threads REQUIRED)

find_path(UTF8PROC_INCLUDE_DIR utf8proc.h REQUIRED)
find_library(UTF8PROC_LIBRARY NAMES utf8proc REQUIRED)

set(BERT_DEP_LIBRARIES
  ${TORCH_LIBRARIES}
  CLI11::CLI11
  spdlog::spdlog
  nlohmann_json::nlohmann_json
  ${HDF5_C_LIBRARIES}
  ${UTF8PROC_LIBRARY}
  Threads::Threads
  ${CMAKE_DL_LIBS})
set(BERT_DEP_DEFINITIONS ${HDF5_C_DEFINITIONS} ${BERT_CUDA_DEFINITION})
include_directories(SYSTEM ${HDF5_C_INCLUDE_DIRS} ${UTF8PROC_INCLUDE_DIR})

if(dnnl_FOUND)
  list(APPEND BERT_DEP_LIBRARIES DNNL::dnnl)
  list(APPEND BERT_DEP_DEFINITIONS BERT_HAVE_DNNL=1)
  message(STATUS "bert-train: oneDNN found (version reported by 'bert-train info')")
else()
  message(STATUS "bert-train: oneDNN headers not found; 'info' reports LibTorch's bundled oneDNN only")
endif()
