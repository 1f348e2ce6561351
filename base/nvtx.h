/* SPDX-License-Identifier: MIT */
/* NVTX ranges for Nsight Systems (docs/profiling.md): AZ_NVTX_PUSH("stage") / AZ_NVTX_POP() around
 * each stage of the worker, inference and trainer loops. They compile to nothing unless the build
 * defines AZ_NVTX=1, which CMake does when the CUDA toolkit's header-only NVTX3 is found and the
 * AZ_NVTX option is ON (the default then). With no profiler attached a range costs a few ns. */
#ifndef AZ_NVTX_H
#define AZ_NVTX_H

#if defined(AZ_NVTX) && AZ_NVTX
#include <nvtx3/nvToolsExt.h>
#define AZ_NVTX_PUSH(name) ((void)nvtxRangePushA(name))
#define AZ_NVTX_POP() ((void)nvtxRangePop())
#else
#define AZ_NVTX_PUSH(name) ((void)0)
#define AZ_NVTX_POP() ((void)0)
#endif

#endif
