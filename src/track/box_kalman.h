// A constant-velocity Kalman filter over a box (ByteTrack's and DeepSORT's): state (cx, cy, a, h,
// vx, vy, va, vh) with a = w / h, measurements (cx, cy, a, h), noise proportional to the box height.
//
// Time, not frames: a prediction covers `dt` reference intervals (the source's nominal frame
// interval, so that dt = 1 is exactly ByteTrack's per-frame step), and the process noise grows
// with dt as a random walk's does. Frames dropped by a policy, a reconnect gap or a variable
// frame rate then give dt = 2, 37 or 0.8, and the box is predicted where it has moved meanwhile.
#pragma once

#include <Eigen/Core>

#include "core/detection.h"

namespace sd::track {

struct BoxState {
  Eigen::Matrix<double, 8, 1> mean;
  Eigen::Matrix<double, 8, 8> covariance;
};

class BoxKalman {
 public:
  // ByteTrack's weights: position 1/20 and velocity 1/160 of the height, per reference interval.
  static constexpr double kStdPosition = 1.0 / 20;
  static constexpr double kStdVelocity = 1.0 / 160;

  static BoxState initiate(const Detection& box);
  // Moves the state dt reference intervals ahead (dt > 0; dt <= 0 leaves it as it is).
  static void predict(BoxState& state, double dt);
  static void update(BoxState& state, const Detection& box);
  // The squared Mahalanobis distance of the box's centre from the state's predicted centre, under
  // the prediction's uncertainty plus the measurement's (grows with the time unseen): chi-square
  // with 2 degrees of freedom for a box of this object.
  static double centre_distance2(const BoxState& state, const Detection& box);
  // The same from another predicted centre (cx, cy), under the state's uncertainty.
  static double centre_distance2(const BoxState& state, const Detection& box, double cx, double cy);
  // The state's box, corners in pixels (the height never below 1 px, the width never negative).
  static Detection box_of(const BoxState& state);
};

}  // namespace sd::track
