// thintensor verify FILE.thin: recomputes every checksum, reports the first bad tensor.
#include "cli/command.h"
#include "core/log.h"
#include "core/progress.h"
#include "format/archive.h"

#include <fmt/format.h>

#include <memory>

static tt::cli::Registration reg("verify", "Recompute every checksum of a .thin archive", 31,
                                 [](CLI::App& sub) -> tt::cli::RunFn {
                                     auto path = std::make_shared<std::string>();
                                     sub.add_option("FILE", *path, ".thin archive")->required();
                                     return [path]() -> int {
                                         const tt::Archive a = tt::Archive::open(*path);
                                         uint64_t total = 0;
                                         for (const auto& t : a.tensors()) total += t.view.nbytes;
                                         tt::Progress progress("verify", total);
                                         a.verify([&](uint64_t done) { progress.set(done); });
                                         progress.finish();
                                         fmt::print("{}: OK ({} tensors, {} files, {} checked)\n", *path,
                                                    a.tensors().size(), a.files().size(), tt::format_bytes(double(total)));
                                         return 0;
                                     };
                                 });
