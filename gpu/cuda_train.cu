/* SPDX-License-Identifier: MIT */
/* GPU training of the residual MLP and the ResNet (gpu/cuda_train.h): minibatch upload through
 * pinned staging, forward (gpu/cuda_net.cu), the loss terms (policy cross-entropy; value squared
 * error, or cross-entropy for a win/draw/loss value head; L2 on weights) reduced in double in a
 * fixed order, backward, and the Adam / SGD update, all on one stream; one small download per
 * call returns the loss. Each piece computes what the matching piece of train/trainer.c
 * computes (same formulas, same summation order where it is ours).
 *
 * Memory ownership: the trainer owns its device memory (weights, gradient, moments, activations,
 * scratch) and pinned staging, all allocated in create; steps never allocate. */
#include <math.h>
#include <string.h>

#include "gpu/cuda_impl.cuh"
#include "gpu/cuda_kernels.h"

extern "C" {
#include "gpu/backend.h"
#include "gpu/cuda_train.h"
}
#include "base/nvtx.h"

enum run_mode { RUN_EVAL, RUN_GRAD, RUN_STEP };

struct az_cuda_train_dev {
	struct az_arch arch;
	uint32_t max_batch;
	size_t n_params;
	struct az_cuda_optim o;
	int math;
	uint64_t steps;
	cudaStream_t stream;
	void *blas, *workspace;
	float *w, *g, *m1, *m2;   /* [n_params]: weights, gradient, moments (m2: Adam only) */
	uint8_t *decay;           /* [n_params]: 1 on weights, 0 on biases */
	float *x, *pi, *z;        /* minibatch [B, D], [B, A], [B] */
	struct az_cuda_acts acts;
	struct az_cuda_bwd_ws ws;
	float *dlogits, *dpre;    /* [B, A], [B, VO] (VO = az_arch_value_outputs()) */
	double *row_ce, *row_se;  /* [B]: policy and value loss per row */
	double *partial;          /* [AZ_CUDA_REDUCE_BLOCKS] */
	double *scal;             /* [3]: sum ce, sum of value losses, sum of squared weights */
	float *h_x, *h_pi, *h_z;  /* pinned staging */
	double *h_scal;           /* pinned [3] */
};

static void free_all(struct az_cuda_train_dev *t)
{
	void *dev[] = { t->w, t->g, t->m1, t->m2, t->decay, t->x, t->pi, t->z, t->acts.trunk,
			t->acts.inner, t->acts.logits, t->acts.value, t->acts.draw, t->acts.wdl,
			t->acts.heads, t->ws.dh, t->ws.dg, t->ws.dt, t->ws.heads, t->dlogits,
			t->dpre, t->row_ce, t->row_se, t->partial, t->scal };
	void *host[] = { t->h_x, t->h_pi, t->h_z, t->h_scal };

	for (size_t i = 0; i < sizeof(dev) / sizeof(dev[0]); i++)
		(void)cudaFree(dev[i]);
	for (size_t i = 0; i < sizeof(host) / sizeof(host[0]); i++)
		if (host[i])
			(void)cudaFreeHost(host[i]);
	az_cuda_blas_destroy(t->blas, t->workspace);
	if (t->stream)
		(void)cudaStreamDestroy(t->stream);
}

/* 1 on every weight matrix, 0 on biases: where the L2 term applies. */
static int upload_decay(struct az_cuda_train_dev *t)
{
	uint8_t *mask = (uint8_t *)calloc(t->n_params, 1);
	uint32_t n = az_model_tensor_count(&t->arch);
	int ret = 0;

	if (!mask)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		struct az_tensor ten;

		az_model_tensor(&t->arch, i, &ten);
		if (ten.ndim >= 2) /* linear and conv weights */
			memset(mask + ten.offset, 1, (size_t)ten.rows * ten.cols);
	}
	AZ_CUDA_CHECK(cudaMemcpy(t->decay, mask, t->n_params, cudaMemcpyHostToDevice), out);
out:
	free(mask);
	return ret;
}

static int alloc_all(struct az_cuda_train_dev *t)
{
	size_t B = t->max_batch, D = t->arch.inputs, R = t->arch.blocks;
	size_t A = t->arch.actions, P = t->n_params, f = sizeof(float), d = sizeof(double);
	size_t VO = az_arch_value_outputs(&t->arch);
	size_t S = az_cuda_net_stride(&t->arch, t->max_batch);
	size_t heads = az_cuda_net_heads_floats(&t->arch, t->max_batch);
	size_t bwd_heads = az_cuda_net_bwd_heads_floats(&t->arch, t->max_batch);
	int ret = 0;

	AZ_CUDA_CHECK(cudaMalloc((void **)&t->w, P * f), out);
	AZ_CUDA_CHECK(cudaMalloc((void **)&t->g, P * f), out);
	AZ_CUDA_CHECK(cudaMalloc((void **)&t->m1, P * f), out);
	AZ_CUDA_CHECK(cudaMemset(t->m1, 0, P * f), out);
	if (t->o.adam) {
		AZ_CUDA_CHECK(cudaMalloc((void **)&t->m2, P * f), out);
		AZ_CUDA_CHECK(cudaMemset(t->m2, 0, P * f), out);
	}
	AZ_CUDA_CHECK(cudaMalloc((void **)&t->decay, P), out);
	AZ_CUDA_CHECK(cudaMalloc((void **)&t->x, B * D * f), out);
	AZ_CUDA_CHECK(cudaMalloc((void **)&t->pi, B * A * f), out);
	AZ_CUDA_CHECK(cudaMalloc((void **)&t->z, B * f), out);
	t->acts.stride = S;
	AZ_CUDA_CHECK(cudaMalloc((void **)&t->acts.trunk, (R + 1) * S * f), out);
	AZ_CUDA_CHECK(cudaMalloc((void **)&t->acts.inner, (R ? R : 1) * S * f), out);
	AZ_CUDA_CHECK(cudaMalloc((void **)&t->acts.logits, B * A * f), out);
	AZ_CUDA_CHECK(cudaMalloc((void **)&t->acts.value, B * f), out);
	if (VO == 3) { /* win/draw/loss: the softmax the loss reads, and p_draw */
		AZ_CUDA_CHECK(cudaMalloc((void **)&t->acts.draw, B * f), out);
		AZ_CUDA_CHECK(cudaMalloc((void **)&t->acts.wdl, B * 3 * f), out);
	}
	AZ_CUDA_CHECK(cudaMalloc((void **)&t->ws.dh, S * f), out);
	AZ_CUDA_CHECK(cudaMalloc((void **)&t->ws.dg, S * f), out);
	AZ_CUDA_CHECK(cudaMalloc((void **)&t->ws.dt, S * f), out);
	if (heads) { /* ResNet: the heads' activations and gradients, the im2col matrix */
		AZ_CUDA_CHECK(cudaMalloc((void **)&t->acts.heads, heads * f), out);
		AZ_CUDA_CHECK(cudaMalloc((void **)&t->ws.heads, bwd_heads * f), out);
	}
	AZ_CUDA_CHECK(cudaMalloc((void **)&t->dlogits, B * A * f), out);
	AZ_CUDA_CHECK(cudaMalloc((void **)&t->dpre, B * VO * f), out);
	AZ_CUDA_CHECK(cudaMalloc((void **)&t->row_ce, B * d), out);
	AZ_CUDA_CHECK(cudaMalloc((void **)&t->row_se, B * d), out);
	AZ_CUDA_CHECK(cudaMalloc((void **)&t->partial, AZ_CUDA_REDUCE_BLOCKS * d), out);
	AZ_CUDA_CHECK(cudaMalloc((void **)&t->scal, 3 * d), out);
	AZ_CUDA_CHECK(cudaMallocHost((void **)&t->h_x, B * D * f), out);
	AZ_CUDA_CHECK(cudaMallocHost((void **)&t->h_pi, B * A * f), out);
	AZ_CUDA_CHECK(cudaMallocHost((void **)&t->h_z, B * f), out);
	AZ_CUDA_CHECK(cudaMallocHost((void **)&t->h_scal, 3 * d), out);
out:
	return ret;
}

/* Forward + loss (+ backward) (+ update) of one minibatch, then the loss download. */
static void run(struct az_cuda_train_dev *t, enum run_mode mode, uint32_t batch, const float *x,
		const float *pi, const float *z, struct az_cuda_loss *loss)
{
	size_t f = sizeof(float), D = t->arch.inputs, A = t->arch.actions;
	double inv_b = 1.0 / batch;
	void *s = t->stream;

	memcpy(t->h_x, x, batch * D * f);
	memcpy(t->h_pi, pi, batch * A * f);
	memcpy(t->h_z, z, batch * f);
	AZ_CUDA_FATAL(cudaMemcpyAsync(t->x, t->h_x, batch * D * f, cudaMemcpyHostToDevice,
				      t->stream));
	AZ_CUDA_FATAL(cudaMemcpyAsync(t->pi, t->h_pi, batch * A * f, cudaMemcpyHostToDevice,
				      t->stream));
	AZ_CUDA_FATAL(cudaMemcpyAsync(t->z, t->h_z, batch * f, cudaMemcpyHostToDevice, t->stream));

	AZ_NVTX_PUSH("forward");
	az_cuda_net_forward(t->blas, s, t->math, &t->arch, t->w, batch, t->x, &t->acts);
	az_cuda_policy_xent(t->acts.logits, t->pi, batch, t->arch.actions, inv_b,
			    mode == RUN_EVAL ? NULL : t->dlogits, t->row_ce, s);
	az_cuda_value_loss(t->acts.value, t->acts.wdl, t->z, batch, inv_b,
			   mode == RUN_EVAL ? NULL : t->dpre, t->row_se, s);
	az_cuda_sum_f64(t->row_ce, batch, t->scal, s);
	az_cuda_sum_f64(t->row_se, batch, t->scal + 1, s);
	az_cuda_sumsq_masked(t->w, t->decay, t->n_params, t->partial, t->scal + 2, s);
	AZ_NVTX_POP();
	if (mode != RUN_EVAL) {
		AZ_NVTX_PUSH("backward");
		az_cuda_net_backward(t->blas, s, t->math, &t->arch, t->w, batch, t->x, &t->acts,
				     t->dlogits, t->dpre, &t->ws, t->g);
		az_cuda_l2_grad(t->w, t->decay, t->n_params, 2.0f * t->o.l2, t->g, s);
		AZ_NVTX_POP();
	}
	if (mode == RUN_STEP) {
		const struct az_cuda_optim *o = &t->o;

		AZ_NVTX_PUSH("step");
		t->steps++;
		if (o->adam) {
			/* As adam_update() in train/trainer.c: bias corrections folded in. */
			double c1 = 1.0 - pow(o->beta1, (double)t->steps);
			double c2 = 1.0 - pow(o->beta2, (double)t->steps);
			float step = (float)(o->lr * sqrt(c2) / c1);
			float eps = (float)(o->eps * sqrt(c2));

			az_cuda_adam(t->w, t->g, t->m1, t->m2, t->n_params, o->beta1, o->beta2,
				     step, eps, s);
		} else {
			az_cuda_sgd(t->w, t->g, t->m1, t->n_params, o->momentum, o->lr, s);
		}
		AZ_NVTX_POP();
	}
	AZ_CUDA_FATAL(cudaMemcpyAsync(t->h_scal, t->scal, 3 * sizeof(double),
				      cudaMemcpyDeviceToHost, t->stream));
	AZ_CUDA_FATAL(cudaStreamSynchronize(t->stream));
	if (loss) {
		loss->policy = t->h_scal[0] * inv_b;
		loss->value = t->h_scal[1] * inv_b;
		loss->l2 = t->o.l2 * t->h_scal[2];
	}
}

static int check(const struct az_cuda_train_dev *t, uint32_t batch, const float *x,
		 const float *pi, const float *z)
{
	return t && x && pi && z && batch > 0 && batch <= t->max_batch ? 0 : -EINVAL;
}

extern "C" {

int az_cuda_train_dev_create(const struct az_arch *a, const float *params,
			     const struct az_cuda_optim *o, uint32_t max_batch,
			     struct az_cuda_train_dev **out)
{
	struct az_cuda_train_dev *t;
	int ret = 0;

	if (!a || !params || !o || !out || max_batch == 0 || !a->inputs || !a->hidden ||
	    !a->actions || !az_arch_valid(a) || !(o->lr > 0.0f) || az_cuda_math_env() < 0)
		return -EINVAL;
	if (!az_cuda_available())
		return -ENODEV;
	t = (struct az_cuda_train_dev *)calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	az_cuda_note_init();
	t->arch = *a;
	t->max_batch = max_batch;
	t->n_params = az_model_param_count(a);
	t->o = *o;
	t->math = az_cuda_math_env();
	AZ_CUDA_CHECK(cudaStreamCreateWithFlags(&t->stream, cudaStreamNonBlocking), err_free);
	ret = az_cuda_blas_create(t->stream, &t->blas, &t->workspace);
	if (ret)
		goto err_free;
	ret = alloc_all(t);
	if (ret)
		goto err_free;
	ret = upload_decay(t);
	if (ret)
		goto err_free;
	AZ_CUDA_CHECK(cudaMemcpy(t->w, params, t->n_params * sizeof(float),
				 cudaMemcpyHostToDevice), err_free);
	AZ_CUDA_CHECK(cudaDeviceSynchronize(), err_free);
	*out = t;
	return 0;

err_free:
	free_all(t); /* every pointer starts NULL */
	free(t);
	return ret;
}

void az_cuda_train_dev_destroy(struct az_cuda_train_dev *t)
{
	if (!t)
		return;
	(void)cudaStreamSynchronize(t->stream);
	free_all(t);
	free(t);
}

int az_cuda_train_dev_step(struct az_cuda_train_dev *t, uint32_t batch, const float *x,
			   const float *pi, const float *z, struct az_cuda_loss *loss)
{
	if (check(t, batch, x, pi, z))
		return -EINVAL;
	run(t, RUN_STEP, batch, x, pi, z, loss);
	return 0;
}

int az_cuda_train_dev_grad(struct az_cuda_train_dev *t, uint32_t batch, const float *x,
			   const float *pi, const float *z, float *grad, struct az_cuda_loss *loss)
{
	if (check(t, batch, x, pi, z))
		return -EINVAL;
	run(t, RUN_GRAD, batch, x, pi, z, loss);
	if (grad)
		AZ_CUDA_FATAL(cudaMemcpy(grad, t->g, t->n_params * sizeof(float),
					 cudaMemcpyDeviceToHost));
	return 0;
}

int az_cuda_train_dev_eval(struct az_cuda_train_dev *t, uint32_t batch, const float *x,
			   const float *pi, const float *z, struct az_cuda_loss *loss)
{
	if (check(t, batch, x, pi, z) || !loss)
		return -EINVAL;
	run(t, RUN_EVAL, batch, x, pi, z, loss);
	return 0;
}

int az_cuda_train_dev_download_params(struct az_cuda_train_dev *t, float *params)
{
	if (!t || !params)
		return -EINVAL;
	AZ_CUDA_FATAL(cudaStreamSynchronize(t->stream));
	AZ_CUDA_FATAL(cudaMemcpy(params, t->w, t->n_params * sizeof(float),
				 cudaMemcpyDeviceToHost));
	return 0;
}

int az_cuda_train_dev_upload_params(struct az_cuda_train_dev *t, const float *params)
{
	if (!t || !params)
		return -EINVAL;
	/* Steady state: a failed copy is fatal, as for every other call after create. The copy
	 * goes on the training stream, after the work queued there: a plain cudaMemcpy runs on the
	 * legacy stream, which the non-blocking training stream does not wait for, and from
	 * pageable memory it may return before the DMA has landed. The sync makes the next step
	 * read the new weights and lets the caller reuse params at once. */
	AZ_CUDA_FATAL(cudaMemcpyAsync(t->w, params, t->n_params * sizeof(float),
				      cudaMemcpyHostToDevice, t->stream));
	AZ_CUDA_FATAL(cudaStreamSynchronize(t->stream));
	return 0;
}

} /* extern "C" */
