/* SPDX-License-Identifier: MIT */
/* Training the policy/value network on the CPU: loss, backprop through the residual MLP of
 * net/model.h, and the optimiser (Adam, or SGD with momentum).
 *   loss = mean_b [ -sum_a pi[b,a] log softmax(logits[b])_a ]     (policy cross-entropy)
 *        + mean_b [ (value[b] - z[b])^2 ]                           (value squared error)
 *        + l2 * sum(weights^2)                                      (L2, weights only, not biases)
 * as in Silver et al. 2017 ("Mastering the game of Go without human knowledge", eq. 1). */
#ifndef AZ_TRAINER_H
#define AZ_TRAINER_H

#include <stdint.h>

#include "net/model.h"

struct az_loss {
	float policy; /* mean cross-entropy */
	float value;  /* mean squared error */
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
};

void az_train_params_default(struct az_train_params *p);

/* Loss and its gradient for a batch: x[B, D], pi[B, A] (target distribution; rows sum to 1,
 * zero on illegal moves), z[B] (game result for the side to move). grad[n_params] is overwritten.
 * acts must hold at least B rows; scratch is allocated internally per call when NULL is passed
 * as ws, otherwise ws must come from az_train_ws_create. Returns 0 or -ENOMEM. */
struct az_train_ws;
int az_train_ws_create(const struct az_arch *a, uint32_t max_batch, struct az_train_ws **out);
void az_train_ws_destroy(struct az_train_ws *ws);
int az_train_loss_grad(const struct az_model *m, uint32_t batch, const float *x, const float *pi,
		       const float *z, float l2, struct az_train_ws *ws, float *grad,
		       struct az_loss *loss);

/* An optimiser bound to one model. */
struct az_trainer;
int az_trainer_create(struct az_model *m, const struct az_train_params *p, uint32_t max_batch,
		      struct az_trainer **out);
void az_trainer_destroy(struct az_trainer *t);

/* One optimisation step on a minibatch (shapes as az_train_loss_grad). Returns 0 or -EINVAL
 * (batch > max_batch). *loss (may be NULL) receives the loss before the step. */
int az_trainer_step(struct az_trainer *t, uint32_t batch, const float *x, const float *pi,
		    const float *z, struct az_loss *loss);

/* Loss without a step (evaluation). */
int az_trainer_eval(struct az_trainer *t, uint32_t batch, const float *x, const float *pi,
		    const float *z, struct az_loss *loss);

#endif
