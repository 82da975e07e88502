// The configure-time paths behind tests/test_util.h (see tests/CMakeLists.txt).
#include "test_util.h"

namespace bert::test {

const char* bert_train_bin() { return BERT_TEST_BIN_PATH; }
const char* source_dir_path() { return BERT_TEST_SOURCE_PATH; }
const char* shared_data_path() { return BERT_TEST_SHARED_PATH; }

}  // namespace bert::test
