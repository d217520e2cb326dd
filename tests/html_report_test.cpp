// `--report report.html`: one self-contained page with the verdict, the stage table, the latency
// histogram and the timeline's data (the browser test, html_report_render.sh, checks it is drawn).
#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <regex>

#include <nlohmann/json.hpp>

#include "fake_engine.h"
#include "report/html_report.h"
#include "runtime/interrupt.h"
#include "runtime/pipeline.h"
#include "runtime/run_context.h"
#include "test_util.h"

namespace sd {
namespace {

// The JSON the page embeds, taken back out of it.
nlohmann::json embedded_data(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"data\">";
  const size_t a = html.find(open);
  const size_t b = html.find("</script>", a);
  if (a == std::string::npos || b == std::string::npos) return {};
  std::string json = html.substr(a + open.size(), b - a - open.size());
  return nlohmann::json::parse(std::regex_replace(json, std::regex("<\\\\/"), "</"));
}

TEST(HtmlReport, ARunWritesOnePageWithTheProfileAndEveryThreadsSpans) {
  clear_interrupt();
  test::TempDir dir;
  test::write_minimal_onnx(dir.file("fake.onnx"));
  test::FakeEngineConfig cfg;
  cfg.fixed_delay_ms = 2;
  test::register_fake_engine("fake-report", cfg);
  RunOptions o;
  o.model.model = dir.file("fake.onnx");
  o.model.engine = "fake-report";
  o.quiet = true;
  o.sources = {"synth:w=160,h=96,frames=40"};
  o.detections = dir.file("d.jsonl");
  o.report = dir.file("report.html");
  auto fut = std::async(std::launch::async, [&] { return run_detection(o); });
  ASSERT_EQ(fut.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  RunOutcome out = fut.get();
  ASSERT_TRUE(out.status) << out.status.error().message;

  const std::string html = test::read_file(dir.file("report.html"));
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  // Self-contained: nothing to fetch.
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  const nlohmann::json d = embedded_data(html);
  ASSERT_FALSE(d.is_null());
  EXPECT_EQ(d["profile"]["frames"], 40);
  EXPECT_EQ(d["profile"]["verdict"], out.profile.verdict);
  EXPECT_FALSE(d["latency_bins"].empty());
  int64_t binned = 0;
  for (const auto& b : d["latency_bins"]) binned += b[2].get<int64_t>();
  EXPECT_EQ(binned, 40);  // every frame's latency is in the histogram
  // One inference span per frame, on the workers' rows, each inside the run's wall time.
  int64_t inference = 0;
  const double wall = d["profile"]["wall_ms"];
  for (const auto& t : d["threads"])
    for (const auto& s : t["spans"]) {
      EXPECT_GE(s[1].get<double>(), 0);
      EXPECT_LE(s[1].get<double>() + s[2].get<double>(), wall + 1);
      if (s[0] == static_cast<int>(Stage::kInference)) inference += s[5].get<int64_t>();
    }
  EXPECT_EQ(inference, 40);
  ASSERT_EQ(d["health"].size(), 1u);
  EXPECT_EQ(d["health"][0]["state"], "ended");
  EXPECT_FALSE(std::filesystem::exists(dir.file("report.html") + ".tmp"));
}

TEST(HtmlReport, TextFromTheRunCannotEndTheDataScript) {
  nlohmann::json d = {{"model", "</script><script>alert(1)</script>"}};
  const std::string page = render_html_report(d);
  EXPECT_EQ(page.find("</script><script>alert(1)"), std::string::npos);
  EXPECT_EQ(embedded_data(page)["model"], "</script><script>alert(1)</script>");
}

}  // namespace
}  // namespace sd

namespace sd {
namespace {

// A long run with --report alone keeps a bounded number of spans per thread (the page says the
// timeline shows the run's beginning); with --trace the trace's own, larger bound holds.
TEST(HtmlReport, AReportAloneKeepsABoundedNumberOfSpansPerThread) {
  RunOptions o;
  o.report = "r.html";
  RunContext run(o);
  ASSERT_TRUE(run.profiler.tracing());
  StageRecorder& rec = run.profiler.make_recorder("reader 0");
  const auto t = Clock::now();
  for (size_t i = 0; i < kReportSpansPerThread + 10; ++i) rec.add(Stage::kRead, t, t, 1, 0, static_cast<int64_t>(i));
  EXPECT_EQ(rec.spans().size(), kReportSpansPerThread);
  EXPECT_TRUE(rec.spans_truncated());

  o.trace = "t.json";
  RunContext traced(o);
  StageRecorder& rec2 = traced.profiler.make_recorder("reader 0");
  for (size_t i = 0; i < kReportSpansPerThread + 10; ++i) rec2.add(Stage::kRead, t, t, 1, 0, static_cast<int64_t>(i));
  EXPECT_EQ(rec2.spans().size(), kReportSpansPerThread + 10);
  StageRecorder::finish_thread();
}

}  // namespace
}  // namespace sd
