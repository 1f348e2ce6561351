/* SPDX-License-Identifier: MIT */
/* The cuda inference backend (the ops hub: tables and lifecycle; the kernels and the network
 * passes live in gpu/cuda_kernels_*.cu, gpu/cuda_gather.cu and gpu/cuda_net.cu). Two paths:
 *   forward():       host x in, host logits/value/draw out, through pinned staging on pipe 0;
 *   forward_slots(): the zero-copy feed. The ring segment is registered (mapped) once; a batch is
 *                    a descriptor of slot offsets, and one CUDA graph per (pipe, model, batch
 *                    bucket) copies the descriptor, gathers the features from the slots, runs
 *                    the net and scatters masked-softmax policies, values and draw
 *                    probabilities (0 for a tanh value head) into the slots.
 * Two pipes (stream, cuBLAS handle, buffers, descriptors, events) let the server submit batch
 * k+1 while batch k computes; wait_slots() reports a pipe's last batch complete, after which the
 * server may publish it. Batches are padded to the bucket (powers of two up to max_batch):
 * padding rows gather zeros and are never scattered.
 *
 * Memory ownership (STYLE.md section 5): the context owns all device memory, pinned buffers,
 * handles, streams, events and graphs; everything is created in cuda_create() and released in
 * cuda_destroy(), so load, forward and forward_slots never allocate. One thread at a time.
 *
 * Errors: during create every CUDA/cuBLAS failure becomes -ENOMEM (allocation) or -ENODEV
 * (anything else); an unset or bad AZ_CUDA_MATH is handled at create (-EINVAL). After create a
 * device error is fatal (abort with file and line), as in ggml: azrun restarts the server. A
 * failed graph capture is not an error: the backend then launches the kernels directly, and
 * says why in its description line (which the server logs).
 *
 * Feeds (AZ_CUDA_FEED): "gather" (default) reads the features from the mapped slots with the
 * gather kernel, one block per row, inside the graph; "dma" copies each run of contiguous slots
 * with one cudaMemcpy2DAsync (source pitch: the slot size) on the copy engine, then launches
 * the net and the scatter directly (the run structure changes per batch, so no graphs). */
#include <string.h>

#include "gpu/cuda_impl.cuh"
#include "gpu/cuda_kernels.h"

extern "C" {
#include "gpu/backend.h"
}
#include "base/az_assert.h"
#include "base/nvtx.h"

#define NPIPES 2
#define MAX_BUCKETS 33

struct pipe {
	cudaStream_t stream;
	void *blas, *workspace;
	float *x;                             /* [B, D] */
	struct az_cuda_acts acts;             /* trunk, inner, logits, value (win/draw/loss: draw,
	                                       * wdl; ResNet: heads) */
	float *tmp;                           /* [B, A] softmax scratch of the scatter */
	uint64_t *d_desc[AZ_BACKEND_MODELS];  /* [2 + B] batch descriptors */
	uint64_t *h_desc[AZ_BACKEND_MODELS];  /* pinned sources of the descriptor copies */
	cudaEvent_t ev[AZ_BACKEND_MODELS];    /* recorded after each model's batch */
	bool have_ev[AZ_BACKEND_MODELS], recorded[AZ_BACKEND_MODELS];
	int last;                             /* model of the last batch not yet waited, or -1 */
	cudaGraphExec_t graph[AZ_BACKEND_MODELS][MAX_BUCKETS];
};

struct cuda_ctx {
	struct az_arch arch;
	uint32_t max_batch;
	size_t n_params;
	int math;
	bool use_graphs;
	bool dma;                     /* AZ_CUDA_FEED=dma: copy-engine feed of slot runs */
	char graph_why[192];          /* why there are no graphs (describe) */
	struct az_cuda_slot_geom geom;
	uint32_t bucket[MAX_BUCKETS]; /* ascending batch sizes, the last one max_batch */
	uint32_t nbuckets;
	float *d_params[AZ_BACKEND_MODELS];
	struct pipe pipes[NPIPES];
	float *h_x, *h_logits, *h_value; /* pinned staging of forward() */
	float *h_draw;                   /* and of a win/draw/loss head's p_draw (else NULL) */
	void *host_base;                 /* registered segment (NULL when none) */
	uint64_t dev_base;               /* its device address */
	char device[64];
};

/* ---- lifecycle ---- */

static void pipe_destroy(struct pipe *p)
{
	for (int m = 0; m < AZ_BACKEND_MODELS; m++) {
		for (int k = 0; k < MAX_BUCKETS; k++)
			if (p->graph[m][k])
				(void)cudaGraphExecDestroy(p->graph[m][k]);
		if (p->have_ev[m])
			(void)cudaEventDestroy(p->ev[m]);
		(void)cudaFree(p->d_desc[m]);
		if (p->h_desc[m])
			(void)cudaFreeHost(p->h_desc[m]);
	}
	(void)cudaFree(p->x);
	(void)cudaFree(p->acts.trunk);
	(void)cudaFree(p->acts.inner);
	(void)cudaFree(p->acts.logits);
	(void)cudaFree(p->acts.value);
	(void)cudaFree(p->acts.draw);
	(void)cudaFree(p->acts.wdl);
	(void)cudaFree(p->acts.heads);
	(void)cudaFree(p->tmp);
	az_cuda_blas_destroy(p->blas, p->workspace);
	if (p->stream)
		(void)cudaStreamDestroy(p->stream);
}

static int pipe_create(struct cuda_ctx *c, struct pipe *p)
{
	size_t B = c->max_batch, D = c->arch.inputs, R = c->arch.blocks;
	size_t A = c->arch.actions, f = sizeof(float), desc = (AZ_CUDA_DESC_HEAD + B) * 8;
	size_t S = az_cuda_net_stride(&c->arch, c->max_batch);
	size_t heads = az_cuda_net_heads_floats(&c->arch, c->max_batch);
	int ret = 0;

	p->last = -1;
	/* Non-blocking: the pipes never wait for the legacy default stream (load() synchronises
	 * the device explicitly). */
	AZ_CUDA_CHECK(cudaStreamCreateWithFlags(&p->stream, cudaStreamNonBlocking), out);
	ret = az_cuda_blas_create(p->stream, &p->blas, &p->workspace);
	if (ret)
		goto out;
	p->acts.stride = S;
	AZ_CUDA_CHECK(cudaMalloc((void **)&p->x, B * D * f), out);
	AZ_CUDA_CHECK(cudaMalloc((void **)&p->acts.trunk, (R + 1) * S * f), out);
	AZ_CUDA_CHECK(cudaMalloc((void **)&p->acts.inner, (R ? R : 1) * S * f), out);
	if (heads) /* ResNet: the heads' planes and the im2col matrix */
		AZ_CUDA_CHECK(cudaMalloc((void **)&p->acts.heads, heads * f), out);
	AZ_CUDA_CHECK(cudaMalloc((void **)&p->acts.logits, B * A * f), out);
	AZ_CUDA_CHECK(cudaMalloc((void **)&p->acts.value, B * f), out);
	if (c->arch.value_head == AZ_VALUE_WDL) { /* the draw probability and the softmax */
		AZ_CUDA_CHECK(cudaMalloc((void **)&p->acts.draw, B * f), out);
		AZ_CUDA_CHECK(cudaMalloc((void **)&p->acts.wdl, B * 3 * f), out);
	}
	AZ_CUDA_CHECK(cudaMalloc((void **)&p->tmp, B * A * f), out);
	for (int m = 0; m < AZ_BACKEND_MODELS; m++) {
		AZ_CUDA_CHECK(cudaMalloc((void **)&p->d_desc[m], desc), out);
		AZ_CUDA_CHECK(cudaMallocHost((void **)&p->h_desc[m], desc), out);
		memset(p->h_desc[m], 0, desc);
		AZ_CUDA_CHECK(cudaEventCreateWithFlags(&p->ev[m], cudaEventDisableTiming), out);
		p->have_ev[m] = true;
	}
out:
	return ret; /* the caller's cuda_destroy() frees a partial pipe */
}

static void cuda_destroy(void *ctx)
{
	struct cuda_ctx *c = (struct cuda_ctx *)ctx;

	if (!c)
		return;
	/* Teardown is best effort: errors here cannot be acted on. */
	(void)cudaDeviceSynchronize();
	if (c->host_base)
		az_cuda_host_unregister(c->host_base);
	for (int i = 0; i < NPIPES; i++)
		pipe_destroy(&c->pipes[i]);
	for (int i = 0; i < AZ_BACKEND_MODELS; i++)
		(void)cudaFree(c->d_params[i]);
	if (c->h_x)
		(void)cudaFreeHost(c->h_x);
	if (c->h_logits)
		(void)cudaFreeHost(c->h_logits);
	if (c->h_value)
		(void)cudaFreeHost(c->h_value);
	if (c->h_draw)
		(void)cudaFreeHost(c->h_draw);
	free(c);
}

/* Batch buckets: 1, 2, 4, ... below max_batch, then max_batch. */
static void make_buckets(struct cuda_ctx *c)
{
	uint32_t b = 1;

	c->nbuckets = 0;
	while (b < c->max_batch && c->nbuckets < MAX_BUCKETS - 1) {
		c->bucket[c->nbuckets++] = b;
		b *= 2;
	}
	c->bucket[c->nbuckets++] = c->max_batch;
}

static uint32_t bucket_for(const struct cuda_ctx *c, uint32_t n)
{
	uint32_t k = 0;

	while (c->bucket[k] < n)
		k++;
	return k; /* n <= max_batch, the last bucket */
}

/* Everything one batch of `rows` rows of model m does on pipe p, in stream order. */
static void enqueue_batch(struct cuda_ctx *c, struct pipe *p, int m, uint32_t rows)
{
	AZ_CUDA_FATAL(cudaMemcpyAsync(p->d_desc[m], p->h_desc[m],
				      (AZ_CUDA_DESC_HEAD + rows) * sizeof(uint64_t),
				      cudaMemcpyHostToDevice, p->stream));
	az_cuda_gather_slots(p->d_desc[m], &c->geom, rows, p->x, p->stream);
	az_cuda_net_forward(p->blas, p->stream, c->math, &c->arch, c->d_params[m], rows, p->x,
			    &p->acts);
	az_cuda_scatter_slots(p->d_desc[m], &c->geom, rows, p->acts.logits, p->acts.value,
			      p->acts.draw, p->tmp, p->stream);
}

/* Direct launches of two batch shapes, the largest bucket (max_batch) and the smallest (1), per
 * pipe and model before any capture, so the first cuBLAS call on each handle (its workspace and
 * set-up) and the first launch of each of our kernels (lazy module loading) happen outside a
 * capture. The buckets in between are not warmed: cuBLAS may pick other GEMM kernels for them
 * and load those inside the capture; if that fails, capture_graphs() records the call and its
 * error and the backend launches directly. The descriptors say 0 rows: the gather writes zeros
 * (padding), the scatter touches no slot, nothing reads the segment (registered only later). */
static void warm_up(struct cuda_ctx *c)
{
	for (int i = 0; i < NPIPES; i++) {
		struct pipe *p = &c->pipes[i];

		for (int m = 0; m < AZ_BACKEND_MODELS; m++) {
			p->h_desc[m][0] = 0;
			p->h_desc[m][1] = 0;
			enqueue_batch(c, p, m, c->max_batch);
			enqueue_batch(c, p, m, 1);
		}
		AZ_CUDA_FATAL(cudaStreamSynchronize(p->stream));
	}
}

/* The dma feed: the descriptor (the scatter still writes through it), then one 2-D copy per
 * run of contiguous slots (consecutive offsets one slot apart: a ring span of one model) from
 * the registered host segment into x, rows of D floats out of slots of geom.bytes, on the copy
 * engine; then the net and the scatter. */
static void enqueue_batch_dma(struct cuda_ctx *c, struct pipe *p, int m, uint32_t rows,
			      const uint64_t *off)
{
	size_t row_bytes = (size_t)c->arch.inputs * sizeof(float), pitch = c->geom.bytes;

	AZ_CUDA_FATAL(cudaMemcpyAsync(p->d_desc[m], p->h_desc[m],
				      (AZ_CUDA_DESC_HEAD + rows) * sizeof(uint64_t),
				      cudaMemcpyHostToDevice, p->stream));
	for (uint32_t i = 0; i < rows;) {
		uint32_t k = 1;

		while (i + k < rows && off[i + k] == off[i] + (uint64_t)k * pitch)
			k++;
		const uint8_t *src = (const uint8_t *)c->host_base + off[i] + c->geom.off_features;
		AZ_CUDA_FATAL(cudaMemcpy2DAsync(p->x + (size_t)i * c->arch.inputs, row_bytes, src,
						pitch, row_bytes, k, cudaMemcpyHostToDevice,
						p->stream));
		i += k;
	}
	az_cuda_net_forward(p->blas, p->stream, c->math, &c->arch, c->d_params[m], rows, p->x,
			    &p->acts);
	az_cuda_scatter_slots(p->d_desc[m], &c->geom, rows, p->acts.logits, p->acts.value,
			      p->acts.draw, p->tmp, p->stream);
}

/* Capture one graph per (pipe, model, bucket). Returns 0, or -ENODEV when capture is not
 * possible here (the caller then launches directly), with the failed call and its CUDA error
 * in c->graph_why: a failed check during capture is noted, not fatal (az_cuda_fail). */
static int capture_graphs(struct cuda_ctx *c)
{
	const char *what = "";
	cudaError_t e = cudaSuccess;

	for (int i = 0; i < NPIPES; i++) {
		struct pipe *p = &c->pipes[i];

		for (int m = 0; m < AZ_BACKEND_MODELS; m++) {
			for (uint32_t k = 0; k < c->nbuckets; k++) {
				cudaGraph_t g = NULL;

				what = "cudaStreamBeginCapture";
				e = cudaStreamBeginCapture(p->stream,
							   cudaStreamCaptureModeThreadLocal);
				if (e != cudaSuccess)
					goto fail;
				az_cuda_capturing = 1;
				az_cuda_capture_failed = 0;
				enqueue_batch(c, p, m, c->bucket[k]);
				az_cuda_capturing = 0;
				what = "cudaStreamEndCapture";
				e = cudaStreamEndCapture(p->stream, &g);
				if (e != cudaSuccess || az_cuda_capture_failed) {
					if (g)
						(void)cudaGraphDestroy(g);
					goto fail;
				}
				what = "cudaGraphInstantiate";
				e = cudaGraphInstantiate(&p->graph[m][k], g, 0);
				(void)cudaGraphDestroy(g);
				if (e != cudaSuccess)
					goto fail;
			}
		}
	}
	return 0;

fail:
	if (az_cuda_capture_failed)
		snprintf(c->graph_why, sizeof(c->graph_why), "graph capture failed: %s",
			 az_cuda_capture_error);
	else
		snprintf(c->graph_why, sizeof(c->graph_why), "graph capture failed: %s: %s", what,
			 cudaGetErrorString(e));
	(void)cudaGetLastError();
	return -ENODEV;
}

static int cuda_create(const struct az_arch *a, uint32_t max_batch, void **ctx)
{
	struct cuda_ctx *c;
	size_t B = max_batch, D = a->inputs, A = a->actions, f = sizeof(float);
	const char *graphs = getenv("AZ_CUDA_GRAPHS");
	const char *feed = getenv("AZ_CUDA_FEED");
	cudaDeviceProp prop;
	int ret = 0, dev = 0;

	if (az_cuda_math_env() < 0)
		return -EINVAL;
	if (feed && strcmp(feed, "gather") != 0 && strcmp(feed, "dma") != 0)
		return -EINVAL;
	c = (struct cuda_ctx *)calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	az_cuda_note_init();
	c->arch = *a;
	c->max_batch = max_batch;
	c->n_params = az_model_param_count(a);
	c->math = az_cuda_math_env();
	c->dma = feed && strcmp(feed, "dma") == 0;
	c->use_graphs = !(graphs && strcmp(graphs, "0") == 0) && !c->dma;
	snprintf(c->graph_why, sizeof(c->graph_why), "%s",
		 c->dma ? "AZ_CUDA_FEED=dma launches directly" : "AZ_CUDA_GRAPHS=0");
	az_cuda_slot_geom_init(&c->geom, a->inputs, a->actions);
	make_buckets(c);
	AZ_CUDA_CHECK(cudaGetDevice(&dev), err_destroy);
	AZ_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev), err_destroy);
	snprintf(c->device, sizeof(c->device), "%s", prop.name);
	for (int i = 0; i < NPIPES; i++) {
		ret = pipe_create(c, &c->pipes[i]);
		if (ret)
			goto err_destroy;
	}
	for (int i = 0; i < AZ_BACKEND_MODELS; i++) {
		AZ_CUDA_CHECK(cudaMalloc((void **)&c->d_params[i], c->n_params * f), err_destroy);
		/* Zeros until loaded: a graph run over an unloaded model reads finite numbers. */
		AZ_CUDA_CHECK(cudaMemset(c->d_params[i], 0, c->n_params * f), err_destroy);
	}
	AZ_CUDA_CHECK(cudaMallocHost((void **)&c->h_x, B * D * f), err_destroy);
	AZ_CUDA_CHECK(cudaMallocHost((void **)&c->h_logits, B * A * f), err_destroy);
	AZ_CUDA_CHECK(cudaMallocHost((void **)&c->h_value, B * f), err_destroy);
	if (a->value_head == AZ_VALUE_WDL)
		AZ_CUDA_CHECK(cudaMallocHost((void **)&c->h_draw, B * f), err_destroy);
	warm_up(c);
	if (c->use_graphs && capture_graphs(c) < 0)
		c->use_graphs = false;
	AZ_CUDA_CHECK(cudaDeviceSynchronize(), err_destroy);
	*ctx = c;
	return 0;

err_destroy:
	cuda_destroy(c); /* every handle starts NULL/false, so partial state frees cleanly */
	return ret;
}

static void cuda_describe(void *ctx, char *buf, size_t len)
{
	struct cuda_ctx *c = (struct cuda_ctx *)ctx;

	const char *feed = c->dma ? "dma feed" : "gather feed";

	if (c->use_graphs)
		snprintf(buf, len, "%s, %s GEMMs, %d streams, %s, CUDA graphs for %u batch buckets",
			 c->device, az_cuda_math_name(c->math), NPIPES, feed, c->nbuckets);
	else
		snprintf(buf, len, "%s, %s GEMMs, %d streams, %s, no CUDA graphs (%s)", c->device,
			 az_cuda_math_name(c->math), NPIPES, feed, c->graph_why);
}

/* ---- the staging path ---- */

static int cuda_load(void *ctx, uint32_t model, const struct az_model *m)
{
	struct cuda_ctx *c = (struct cuda_ctx *)ctx;

	/* Batches in flight may still read the old weights: let them finish first. The copy runs
	 * on the legacy stream, which the non-blocking pipes do not wait for: synchronise again. */
	AZ_CUDA_FATAL(cudaDeviceSynchronize());
	AZ_CUDA_FATAL(cudaMemcpy(c->d_params[model], m->params, c->n_params * sizeof(float),
				 cudaMemcpyHostToDevice));
	AZ_CUDA_FATAL(cudaDeviceSynchronize());
	return 0;
}

static int cuda_forward(void *ctx, uint32_t model, uint32_t batch, const float *x, float *logits,
			float *value, float *draw)
{
	struct cuda_ctx *c = (struct cuda_ctx *)ctx;
	struct pipe *p = &c->pipes[0];
	size_t f = sizeof(float), nx = (size_t)batch * c->arch.inputs;
	size_t nl = (size_t)batch * c->arch.actions;

	/* Slot batches may still use pipe 0's buffers. */
	AZ_CUDA_FATAL(cudaStreamSynchronize(p->stream));
	AZ_NVTX_PUSH("H2D");
	memcpy(c->h_x, x, nx * f);
	AZ_CUDA_FATAL(cudaMemcpyAsync(p->x, c->h_x, nx * f, cudaMemcpyHostToDevice, p->stream));
	AZ_NVTX_POP();
	AZ_NVTX_PUSH("net"); /* nested in the server's "forward" */
	az_cuda_net_forward(p->blas, p->stream, c->math, &c->arch, c->d_params[model], batch, p->x,
			    &p->acts);
	AZ_NVTX_POP();
	AZ_NVTX_PUSH("D2H");
	AZ_CUDA_FATAL(cudaMemcpyAsync(c->h_logits, p->acts.logits, nl * f, cudaMemcpyDeviceToHost,
				      p->stream));
	AZ_CUDA_FATAL(cudaMemcpyAsync(c->h_value, p->acts.value, batch * f, cudaMemcpyDeviceToHost,
				      p->stream));
	if (p->acts.draw)
		AZ_CUDA_FATAL(cudaMemcpyAsync(c->h_draw, p->acts.draw, batch * f,
					      cudaMemcpyDeviceToHost, p->stream));
	AZ_CUDA_FATAL(cudaStreamSynchronize(p->stream));
	memcpy(logits, c->h_logits, nl * f);
	memcpy(value, c->h_value, batch * f);
	if (p->acts.draw)
		memcpy(draw, c->h_draw, batch * f);
	else
		memset(draw, 0, batch * f); /* a tanh head has no draw probability */
	AZ_NVTX_POP();
	return 0;
}

/* ---- the zero-copy slot path ---- */

static int cuda_register_host(void *ctx, void *base, size_t size)
{
	struct cuda_ctx *c = (struct cuda_ctx *)ctx;
	void *dev = NULL;
	int ret;

	if (c->host_base)
		return -EINVAL;
	ret = az_cuda_host_register(base, size, &dev);
	if (ret)
		return ret;
	c->host_base = base;
	c->dev_base = (uint64_t)(uintptr_t)dev;
	return 0;
}

static void cuda_unregister_host(void *ctx)
{
	struct cuda_ctx *c = (struct cuda_ctx *)ctx;

	if (!c->host_base)
		return;
	/* No kernel may still read or write the segment. */
	AZ_CUDA_FATAL(cudaDeviceSynchronize());
	az_cuda_host_unregister(c->host_base);
	c->host_base = NULL;
	c->dev_base = 0;
	for (int i = 0; i < NPIPES; i++)
		c->pipes[i].last = -1;
}

/* l equals the layout of c->geom (checked by gpu/backend.c); the geometry was computed at create
 * because the CUDA graphs bake it in. */
static int cuda_forward_slots(void *ctx, uint32_t model, uint32_t n, const uint64_t *offsets,
			      const struct az_slot_layout *l, uint32_t stream)
{
	struct cuda_ctx *c = (struct cuda_ctx *)ctx;
	struct pipe *p = &c->pipes[stream];
	uint64_t *h = p->h_desc[model];

	(void)l;
	AZ_NVTX_PUSH("H2D");
	/* The descriptor's previous copy (this pipe's previous batch of this model) must have run
	 * before its source is rewritten; the server has normally waited for it already. */
	if (p->recorded[model])
		AZ_CUDA_FATAL(cudaEventSynchronize(p->ev[model]));
	h[0] = n;
	h[1] = c->dev_base;
	memcpy(h + AZ_CUDA_DESC_HEAD, offsets, (size_t)n * sizeof(uint64_t));
	AZ_NVTX_POP();
	AZ_NVTX_PUSH("forward");
	if (c->dma)
		enqueue_batch_dma(c, p, (int)model, n, offsets);
	else if (c->use_graphs)
		AZ_CUDA_FATAL(cudaGraphLaunch(p->graph[model][bucket_for(c, n)], p->stream));
	else
		enqueue_batch(c, p, (int)model, n);
	AZ_CUDA_FATAL(cudaEventRecord(p->ev[model], p->stream));
	AZ_NVTX_POP();
	p->recorded[model] = true;
	p->last = (int)model;
	return 0;
}

static int cuda_wait_slots(void *ctx, uint32_t stream, int block)
{
	struct cuda_ctx *c = (struct cuda_ctx *)ctx;
	struct pipe *p = &c->pipes[stream];
	cudaError_t e;

	if (p->last < 0)
		return 1;
	if (block) {
		AZ_CUDA_FATAL(cudaEventSynchronize(p->ev[p->last]));
	} else {
		e = cudaEventQuery(p->ev[p->last]);
		if (e == cudaErrorNotReady) {
			/* Not an error, but clear it in case the runtime recorded it as the last
			 * one: the next launch check (cudaGetLastError) must not see it. */
			(void)cudaGetLastError();
			return 0;
		}
		AZ_CUDA_FATAL(e);
	}
	p->last = -1; /* the last batch covers the earlier ones: same stream */
	return 1;
}

extern "C" {

extern const struct az_backend_ops az_backend_cuda_ops = {
	"cuda",
	cuda_create,
	cuda_load,
	cuda_forward,
	cuda_destroy,
	cuda_describe,
	cuda_register_host,
	cuda_unregister_host,
	cuda_forward_slots,
	cuda_wait_slots,
	NPIPES,
	NULL, /* preferred_batch: every row up to max_batch pays on a GPU */
};

} /* extern "C" */
