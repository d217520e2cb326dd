// The benchmarks' 1280x720 test picture as a frame message, JPEG at quality 90 (about 127 kB):
// gradients and filled boxes, blurred (edges and smooth areas, not noise).
#pragma once

#include <string>

#include <opencv2/imgproc.hpp>

#include "transport/frame_codec.h"

namespace sd::bench {

inline const std::string& jpeg_frame_message_720p() {
  static const std::string msg = [] {
    cv::Mat img(720, 1280, CV_8UC3);
    for (int y = 0; y < img.rows; ++y)
      for (int x = 0; x < img.cols; ++x)
        img.at<cv::Vec3b>(y, x) = cv::Vec3b(static_cast<uchar>((x * 7 + y * 3) % 256), static_cast<uchar>(y * 255 / 720), 90);
    for (int i = 0; i < 12; ++i)
      cv::rectangle(img, {80 + i * 95, 100 + (i % 4) * 120, 70, 90}, cv::Scalar(30 + i * 18, 200 - i * 10, 60 + i * 12), -1);
    cv::GaussianBlur(img, img, {5, 5}, 1.5);
    return *transport::encode_frame_message(img, "cam", 0, 0, 90);
  }();
  return msg;
}

}  // namespace sd::bench
