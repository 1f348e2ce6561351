/* SPDX-License-Identifier: MIT */
/* Built instead of gpu/cuda_backend.cu when no CUDA compiler is present: no device is ever
 * available, and az_backend_cuda_ops is not defined (gpu/backend.c never refers to it then). */
#include "gpu/backend.h"

int az_cuda_available(void)
{
	return 0;
}
