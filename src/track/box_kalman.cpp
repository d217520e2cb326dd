#include "track/box_kalman.h"

#include <Eigen/Cholesky>

#include <algorithm>

namespace sd::track {

namespace {

using Vec4 = Eigen::Matrix<double, 4, 1>;
using Mat4 = Eigen::Matrix<double, 4, 4>;
using Vec8 = Eigen::Matrix<double, 8, 1>;
using Mat8 = Eigen::Matrix<double, 8, 8>;

Vec4 measurement_of(const Detection& d) {
  const double w = std::max(0.f, d.x2 - d.x1), h = std::max(1e-3f, d.y2 - d.y1);
  return {0.5 * (d.x1 + d.x2), 0.5 * (d.y1 + d.y2), w / h, h};
}

}  // namespace

BoxState BoxKalman::initiate(const Detection& box) {
  const Vec4 z = measurement_of(box);
  BoxState s;
  s.mean.setZero();
  s.mean.head<4>() = z;
  const double h = z(3);
  Vec8 std;
  std << 2 * kStdPosition * h, 2 * kStdPosition * h, 1e-2, 2 * kStdPosition * h, 10 * kStdVelocity * h,
      10 * kStdVelocity * h, 1e-5, 10 * kStdVelocity * h;
  s.covariance = std.array().square().matrix().asDiagonal();
  return s;
}

void BoxKalman::predict(BoxState& s, double dt) {
  if (!(dt > 0)) return;
  const double h = s.mean(3);
  Vec8 std;
  std << kStdPosition * h, kStdPosition * h, 1e-2, kStdPosition * h, kStdVelocity * h, kStdVelocity * h, 1e-5,
      kStdVelocity * h;
  // A random walk's variance grows linearly with the time it walks: Q(dt) = dt * Q(1).
  // F = [I dt*I; 0 I] on the (position, velocity) blocks, so F P F^T is done block-wise:
  // [A B; B' C] -> [A + dt (B + B') + dt^2 C, B + dt C; B' + dt C, C] (the 8x8 products cost ~10x).
  for (int i = 0; i < 4; ++i) s.mean(i) += dt * s.mean(4 + i);
  auto& p = s.covariance;
  const Eigen::Matrix<double, 4, 4> c = p.bottomRightCorner<4, 4>();
  const Eigen::Matrix<double, 4, 4> b = p.topRightCorner<4, 4>() + dt * c;  // B + dt C
  p.topLeftCorner<4, 4>() += dt * (p.topRightCorner<4, 4>() + p.bottomLeftCorner<4, 4>()) + dt * dt * c;
  p.topRightCorner<4, 4>() = b;
  p.bottomLeftCorner<4, 4>() = b.transpose();
  p.diagonal() += dt * std.array().square().matrix();
}

void BoxKalman::update(BoxState& s, const Detection& box) {
  const Vec4 z = measurement_of(box);
  const double h = s.mean(3);
  Vec4 std;
  std << kStdPosition * h, kStdPosition * h, 1e-1, kStdPosition * h;
  // The measurement is the state's first four entries (H = [I 0]): H P H^T is P's top-left block
  // and P H^T its left columns.
  Mat4 innovation_cov = s.covariance.topLeftCorner<4, 4>();
  innovation_cov.diagonal() += std.array().square().matrix();
  const Eigen::Matrix<double, 8, 4> pht = s.covariance.leftCols<4>();
  // K = P H^T S^-1 through S's Cholesky factor (S is symmetric positive definite).
  const Eigen::Matrix<double, 8, 4> gain = innovation_cov.llt().solve(pht.transpose()).transpose();
  s.mean += gain * (z - s.mean.head<4>());
  // P - K S K^T = P - K (P H^T)^T, as K S = P H^T.
  s.covariance -= gain * pht.transpose();
}

double BoxKalman::centre_distance2(const BoxState& s, const Detection& box) {
  return centre_distance2(s, box, s.mean(0), s.mean(1));
}

double BoxKalman::centre_distance2(const BoxState& s, const Detection& box, double cx, double cy) {
  const Vec4 z = measurement_of(box);
  const double r = kStdPosition * s.mean(3);
  Eigen::Matrix2d cov = s.covariance.topLeftCorner<2, 2>();
  cov.diagonal().array() += r * r;
  const Eigen::Vector2d d = z.head<2>() - Eigen::Vector2d(cx, cy);
  return d.dot(cov.llt().solve(d));
}

Detection BoxKalman::box_of(const BoxState& s) {
  const double h = std::max(1.0, s.mean(3));
  const double w = std::max(0.0, s.mean(2) * h);
  Detection d;
  d.x1 = static_cast<float>(s.mean(0) - w / 2);
  d.x2 = static_cast<float>(s.mean(0) + w / 2);
  d.y1 = static_cast<float>(s.mean(1) - h / 2);
  d.y2 = static_cast<float>(s.mean(1) + h / 2);
  return d;
}

}  // namespace sd::track
