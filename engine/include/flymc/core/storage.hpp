#pragma once
/// @file storage.hpp
/// How a data set holds its features (Dataset, RunConfig::storage).

namespace flymc {

/// Features as doubles, or as floats (`--storage f32`: half the memory and bandwidth). Labels stay
/// doubles. Every consumer widens a float exactly to the double it stands for, so a run on float
/// storage is the run on the data rounded to float: exact for those data.
enum class Storage { f64, f32 };

}  // namespace flymc
