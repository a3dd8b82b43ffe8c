#include "trainscope/proto/job_id.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trainscope::protocol {
namespace {

using ::testing::HasSubstr;

TEST(JobIdTest, AcceptsTheAlphabetUpTo128Characters) {
  for (const std::string& good :
       {std::string("a"), std::string("A.b_c-9"), std::string("..."), std::string(".hidden"),
        std::string("job.."), std::string(kMaxJobIdLength, 'x')}) {
    EXPECT_TRUE(IsValidJobId(good)) << good;
    EXPECT_TRUE(ValidateJobId(good, "job_id").ok()) << good;
  }
}

// "." and ".." name the jobs directory and its parent: every copy of the rule
// used to disagree on them; the protocol refuses both everywhere.
TEST(JobIdTest, RefusesDotAndDotDotNamingTheIdAndWhatIsExpected) {
  for (const std::string& bad : {std::string("."), std::string("..")}) {
    EXPECT_FALSE(IsValidJobId(bad)) << bad;
    const absl::Status s = ValidateJobId(bad, "hello.job_id");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(s.message()), HasSubstr("hello.job_id: '" + bad + "'"));
    EXPECT_THAT(std::string(s.message()),
                HasSubstr("expected 1 to 128 characters from [A-Za-z0-9._-], not '.' or '..'"));
  }
}

TEST(JobIdTest, RefusesEmptyTooLongAndOtherCharacters) {
  for (const std::string& bad : {std::string(""), std::string("a/b"), std::string("job id"),
                                 std::string("naïve"), std::string(kMaxJobIdLength + 1, 'x')}) {
    EXPECT_FALSE(IsValidJobId(bad)) << bad;
    EXPECT_EQ(ValidateJobId(bad, "--job").code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(JobIdTest, ShowsAtMost64BytesOfAnOverlongId) {
  const std::string message(ValidateJobId(std::string(1000, 'y'), "job_id").message());
  EXPECT_THAT(message, HasSubstr("'" + std::string(64, 'y') + "...' (1000 bytes)"));
  EXPECT_THAT(message, ::testing::Not(HasSubstr(std::string(65, 'y'))));
}

}  // namespace
}  // namespace trainscope::protocol
