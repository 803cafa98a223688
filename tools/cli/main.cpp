// flymc: the command line. Sub-commands live in cmd_*.cpp; errors map to sysexits codes
// (64 usage, 65 data, 70 software, 73 cannot create, 74 I/O, 75 stopped by SIGINT/SIGTERM after
// a checkpoint, 78 configuration); `flymc validate`
// exits 1 when a calibration test fails.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <new>

#include "commands.hpp"
#include "flymc/core/errors.hpp"

int main(int argc, char** argv) {
  CLI::App app{"flymc: exact Bayesian posterior sampling on tall data with Firefly Monte Carlo"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "flymc 0.1.0");
  flymc::cli::add_data_command(app);
  flymc::cli::add_sample_command(app);
  flymc::cli::add_summary_command(app);
  flymc::cli::add_report_command(app);
  flymc::cli::add_validate_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 64;  // EX_USAGE
  } catch (const flymc::cli::ExitStatus& e) {
    return e.code;
  } catch (const flymc::Error& e) {
    std::fprintf(stderr, "flymc: error: %s\n", e.what());
    return e.exit_code();
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "flymc: error: out of memory\n");
    return 70;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flymc: internal error: %s\n", e.what());
    return 70;
  }
  return 0;
}
