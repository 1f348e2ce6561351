/* SPDX-License-Identifier: MIT */
/* Training the policy/value network on the CPU: loss, backprop through the residual MLP of
 * net/model.h, and the optimiser (Adam, or SGD with momentum).
 *   loss = mean_b [ -sum_a pi[b,a] log softmax(logits[b])_a ]     (policy cross-entropy, the
 *                                                                   softmax over legal moves)
 *        + mean_b [ (value[b] - z[b])^2 ]                           (value squared error)
 *          (a win/draw/loss head: mean_b [ -sum_k t[b,k] log p[b,k] ], t from z as in
 *          trainer.c's value_loss)
 *        + l2 * sum(weights^2)                                      (L2, weights only, not biases)
 * as in Silver et al. 2017 ("Mastering the game of Go without human knowledge", eq. 1). */
#ifndef AZ_TRAINER_H
#define AZ_TRAINER_H

#include <stdint.h>

#include "net/model.h"

struct az_loss {
	float policy; /* mean cross-entropy */
	float value;  /* mean squared error (a win/draw/loss head: mean cross-entropy) */
	float l2;     /* l2 * sum of squared weights */
	float total;
};

enum az_optim { AZ_OPTIM_ADAM = 0, AZ_OPTIM_SGD = 1 };

struct az_train_params {
	enum az_optim optim;
	float lr;       /* default 1e-3 (Adam) */
	float momentum; /* SGD only, default 0.9 */
	float l2;       /* default 1e-4 */
	float beta1, beta2, eps; /* Adam (Kingma and Ba 2015): 0.9, 0.999, 1e-8 */
	/* CPU trainer: threads a step splits its minibatch between (data parallel: the gradient
	 * of each thread's rows, added in thread order), 1..AZ_TRAIN_THREADS_MAX; default 1. The
	 * sums differ from one thread's only by float rounding, the same for the same count. */
	uint32_t threads;
};

#define AZ_TRAIN_THREADS_MAX 16

/* The trainer threads for minibatches of `batch` rows when none are asked for: one per CPU this
 * process may use (az_cpus_available()), at most batch / 16 (a smaller part does not keep a
 * core's kernels busy) and AZ_TRAIN_THREADS_MAX, at least 1. azrun's phases take turns, so the
 * self-play processes sleep while the trainer runs. */
uint32_t az_train_threads_auto(uint32_t batch);

void az_train_params_default(struct az_train_params *p);

/* Loss and its gradient for a batch: x[B, D], pi[B, A] (target distribution; rows sum to 1,
 * -0.0f on illegal moves, which the softmax leaves out: train/replay.h), z[B] (game result for
 * the side to move). grad[n_params] is overwritten. acts must hold at least B rows; scratch is
 * allocated internally per call when NULL is passed as ws, otherwise ws must come from
 * az_train_ws_create. Returns 0 or -ENOMEM. */
struct az_train_ws;
int az_train_ws_create(const struct az_arch *a, uint32_t max_batch, struct az_train_ws **out);
void az_train_ws_destroy(struct az_train_ws *ws);
int az_train_loss_grad(const struct az_model *m, uint32_t batch, const float *x, const float *pi,
		       const float *z, float l2, struct az_train_ws *ws, float *grad,
		       struct az_loss *loss);

/* Policy loss of one row: -sum_a tp[a] * log softmax(lg)[a] over A actions, in nats, computed
 * in double with the max subtracted before exp. The softmax is taken over the legal actions only:
 * an entry tp[a] with its sign bit set (-0.0f, train/replay.h) marks action a illegal and leaves
 * lg[a] out of the max, the sum and the gradient (dl[a] = 0); a row with every sign bit set is
 * read unmasked. When dl is not NULL it receives the gradient w.r.t. the logits times inv_b (the
 * 1/B of a batch mean): dl[a] = (softmax_a * sum(tp) - tp[a]) * inv_b on legal a. Used per row
 * by az_train_loss_grad; the CUDA loss kernel is tested against it. */
double az_train_policy_xent(const float *lg, const float *tp, uint32_t A, double inv_b,
			    float *dl);

/* ---- the CPU trainer: an optimiser bound to one model (train/trainer.c) ----
 * The reference implementation behind the "cpu" table of train/train_backend.h, which is how
 * processes and tools train; called directly by the tests of the maths. It updates m->params in
 * place, so the model is always current. One thread uses a trainer at a time. */
struct az_train_cpu;

/* Bind an optimiser to m (borrowed: m must outlive the trainer) for minibatches of up to max_batch
 * rows; the moments start at zero. Returns 0, -EINVAL (NULL arguments, max_batch 0, lr <= 0, an
 * unknown optimiser, threads outside 1..AZ_TRAIN_THREADS_MAX), -ENOMEM or pthread_create's
 * -errno. With p->threads > 1 it starts threads - 1 helper threads, joined by
 * az_train_cpu_destroy(). */
int az_train_cpu_create(struct az_model *m, const struct az_train_params *p, uint32_t max_batch,
			struct az_train_cpu **out);
void az_train_cpu_destroy(struct az_train_cpu *t); /* NULL: no-op; the model is not freed */

/* One optimisation step on a minibatch (shapes as az_train_loss_grad). Returns 0 or -EINVAL
 * (batch 0 or > max_batch). *loss (may be NULL) receives the loss before the step. */
int az_train_cpu_step(struct az_train_cpu *t, uint32_t batch, const float *x, const float *pi,
		      const float *z, struct az_loss *loss);

/* Loss without a step (evaluation; loss must not be NULL). Returns 0 or -EINVAL. */
int az_train_cpu_eval(struct az_train_cpu *t, uint32_t batch, const float *x, const float *pi,
		      const float *z, struct az_loss *loss);

#endif
