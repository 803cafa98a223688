#pragma once
/// @file flymc.hpp
/// The library's public surface in one include: configure a run, load data, sample, summarize.
/// Each room's headers can also be included alone (docs/architecture.md maps them).
#include "flymc/core/atomic_file.hpp"
#include "flymc/core/config.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/rng.hpp"
#include "flymc/data/dataset.hpp"
#include "flymc/data/loaders.hpp"
#include "flymc/diagnostics/diagnostics.hpp"
#include "flymc/io/output.hpp"
#include "flymc/io/run_record.hpp"
#include "flymc/io/stan_csv.hpp"
#include "flymc/mcmc/front_door.hpp"
#include "flymc/mcmc/model_needs.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "flymc/models/family.hpp"
#include "flymc/models/global_family.hpp"
