// The web view's sink (--serve): hands the latest annotated frame of each source to the web
// server's FrameBoard while someone watches, at most --serve-fps a second. It does not ask the
// pipeline to draw every frame: it draws on its own copy of the few frames it takes (unless
// another output already has the pipeline draw them).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "serve/frame_board.h"
#include "sinks/sink.h"

namespace sd {

class WebViewSink : public Sink {
 public:
  // `frames_drawn`: the pipeline draws the detections on every frame already (another sink wants it).
  WebViewSink(std::shared_ptr<FrameBoard> board, std::vector<std::string> class_names, bool frames_drawn)
      : board_(std::move(board)), class_names_(std::move(class_names)), frames_drawn_(frames_drawn) {}

  std::string name() const override { return "web view"; }
  Status write(const FrameResult& result) override;
  Status finish() override { return ok(); }

 private:
  std::shared_ptr<FrameBoard> board_;
  std::vector<std::string> class_names_;
  bool frames_drawn_;
};

}  // namespace sd
