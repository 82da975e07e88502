// Device selection: cpu always works, missing backends fail with what was looked for.
#include <gtest/gtest.h>

#include "bert/common/error.h"
#include "bert/device/device.h"

using namespace bert;

TEST(Device, CpuIsAlwaysAvailable) {
  auto d = select_device("cpu");
  EXPECT_EQ(d->name(), "cpu");
  EXPECT_TRUE(d->availability().ok);
  EXPECT_EQ(d->torch_device(), torch::Device(torch::kCPU));
  EXPECT_GT(d->peak_flops("fp32"), 0);
  EXPECT_EQ(d->collective_backend(), "gloo");
}

TEST(Device, AutoPicksSomethingAvailable) {
  auto d = select_device("auto");
  EXPECT_TRUE(d->availability().ok);
}

TEST(Device, UnavailableBackendsExplainThemselves) {
  for (const char* name : {"hpu", "ipu"}) {
    try {
      select_device(name);
      ADD_FAILURE() << name << " unexpectedly available";
    } catch (const UserError& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find(std::string("device ") + name + " is not available"), std::string::npos) << msg;
      EXPECT_NE(msg.find("not found"), std::string::npos) << msg;
    }
  }
  if (!make_cuda_device()->availability().ok) {
    EXPECT_THROW(select_device("cuda"), UserError);
  }
}

TEST(Device, UnknownNameSuggests) {
  try {
    select_device("cdua");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'cuda'"), std::string::npos) << e.what();
  }
}

TEST(Device, Fp16OnCpuIsRejected) {
  try {
    select_device("cpu", "fp16");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("fp16"), std::string::npos);
  }
}

TEST(Device, CpuBf16AutocastScope) {
  auto d = select_device("cpu", "bf16");
  auto a = torch::randn({4, 8}), b = torch::randn({8, 3});
  {
    AutocastScope scope(*d, "bf16");
    EXPECT_EQ(torch::matmul(a, b).scalar_type(), torch::kBFloat16);
  }
  EXPECT_EQ(torch::matmul(a, b).scalar_type(), torch::kFloat);
}

TEST(Device, CpuFeaturesAreRead) {
  CpuFeatures f = cpu_features();
  EXPECT_GT(f.logical_cores, 0);
  EXPECT_FALSE(f.model.empty());
}
