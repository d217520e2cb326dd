// What the GPU letterbox kernel needs to write a frame's input exactly as preprocess_frame does:
// the content's size and corner from the LetterboxTransform (which stays on the host to map
// boxes back) and the channel map of the PreprocessSpec (letterbox.cpp's ChannelMap).
#pragma once

#include "engine/gpu_frame_input.h"
#include "preprocess/letterbox.h"

namespace sd {

GpuInputPlacement gpu_input_placement(const LetterboxTransform& t, const PreprocessSpec& spec);

}  // namespace sd
