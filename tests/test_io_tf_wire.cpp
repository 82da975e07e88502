// CRC-32C, varints and the protobuf wire reader used by the TensorBundle reader.
#include <gtest/gtest.h>

#include "bert/common/error.h"
#include "bert/io/tensorbundle_wire.h"

using namespace bert;
using namespace bert::io;

TEST(IoTfWire, Crc32cKnownValues) {
  EXPECT_EQ(crc32c(""), 0u);
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);  // the standard CRC-32C check value
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);  // RFC 3720 test vector
  EXPECT_EQ(crc32c_extend(crc32c("1234"), "56789", 5), crc32c("123456789"));
}

TEST(IoTfWire, MaskRoundTripsAndChangesValue) {
  for (uint32_t v : {0u, 1u, 0xE3069283u, 0xffffffffu}) {
    EXPECT_EQ(crc32c_unmask(crc32c_mask(v)), v);
    EXPECT_NE(crc32c_mask(v), v);
  }
}

TEST(IoTfWire, VarintAndFixedRoundTrip) {
  std::string buf;
  const uint64_t values[] = {0, 1, 127, 128, 300, 1ull << 32, ~0ull};
  for (uint64_t v : values) put_varint(buf, v);
  put_fixed32(buf, 0xdeadbeef);
  put_fixed64(buf, 0x0123456789abcdefull);
  ByteReader in(buf, "buf");
  for (uint64_t v : values) EXPECT_EQ(in.varint64("v"), v);
  EXPECT_EQ(in.fixed32("f"), 0xdeadbeefu);
  EXPECT_EQ(in.fixed64("f"), 0x0123456789abcdefull);
  EXPECT_TRUE(in.done());
}

TEST(IoTfWire, MalformedInputThrowsUserError) {
  std::string cont("\x80\x80", 2);
  ByteReader truncated(cont, "x.index");
  EXPECT_THROW(truncated.varint64("len"), UserError);
  std::string eleven(11, '\xff');
  ByteReader too_long(eleven, "x.index");
  EXPECT_THROW(too_long.varint64("len"), UserError);
  ByteReader short_bytes("abc", "x.index");
  EXPECT_THROW(short_bytes.bytes(4, "key"), UserError);
  std::string big;
  put_varint(big, 1ull << 33);
  ByteReader b32(big, "x.index");
  EXPECT_THROW(b32.varint32("n"), UserError);
  try {
    ByteReader r("", "x.index");
    r.fixed32("crc");
    FAIL() << "no throw";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("x.index"), std::string::npos);
  }
}

TEST(IoTfWire, ProtoReaderDecodesFields) {
  std::string msg;
  put_varint(msg, (1 << 3) | 0);  // field 1 varint
  put_varint(msg, 150);
  put_varint(msg, (2 << 3) | 2);  // field 2 bytes
  put_varint(msg, 3);
  msg += "abc";
  put_varint(msg, (6 << 3) | 5);  // field 6 fixed32
  put_fixed32(msg, 7);
  ProtoReader r(msg, "m");
  ProtoField f;
  ASSERT_TRUE(r.next(f));
  EXPECT_EQ(f.number, 1u);
  EXPECT_EQ(f.value, 150u);
  ASSERT_TRUE(r.next(f));
  EXPECT_EQ(f.number, 2u);
  EXPECT_EQ(f.bytes, "abc");
  ASSERT_TRUE(r.next(f));
  EXPECT_EQ(f.number, 6u);
  EXPECT_EQ(f.value, 7u);
  EXPECT_FALSE(r.next(f));

  std::string group;
  put_varint(group, (1 << 3) | 3);  // start-group: unsupported
  ProtoReader g(group, "m");
  EXPECT_THROW(g.next(f), UserError);
  std::string zero;
  put_varint(zero, 0);  // field number 0
  ProtoReader z(zero, "m");
  EXPECT_THROW(z.next(f), UserError);
  std::string overlong;
  put_varint(overlong, (2 << 3) | 2);
  put_varint(overlong, 100);  // length past the end
  ProtoReader o(overlong, "m");
  EXPECT_THROW(o.next(f), UserError);
}
