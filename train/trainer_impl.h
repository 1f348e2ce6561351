/* SPDX-License-Identifier: MIT */
/* Between the trainer's maths (train/trainer.c: loss, backprop) and its optimiser and threads
 * (train/train_cpu.c); not for other modules. */
#ifndef AZ_TRAIN_TRAINER_IMPL_H
#define AZ_TRAIN_TRAINER_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "train/trainer.h"

/* Rows [0, batch) of a minibatch (x[batch, D], pi[batch, A], z[batch]): the forward pass, the
 * sums of their data terms (*ce policy cross-entropies, *se value terms, undivided), and into
 * grad[n_params] (overwritten) the data terms' gradient scaled by inv_b, 1 / the whole
 * minibatch's rows, so that the parts of a minibatch add up to its gradient. No L2 term. ws
 * holds at least batch rows; it is the part's own (one thread at a time). */
void az_train_part_grad(const struct az_model *m, uint32_t batch, const float *x, const float *pi,
			const float *z, double inv_b, struct az_train_ws *ws, float *grad,
			double *ce, double *se);

/* The sum of squares of the weights (not the biases) among params [lo, hi); with grad, also
 * grad += 2 * l2 * w on them. */
double az_train_l2_range(const struct az_model *m, float l2, float *grad, size_t lo, size_t hi);

/* *loss from the data sums of a whole minibatch of `batch` rows and the sum of squared
 * weights sq (az_train_l2_range over all). */
void az_train_loss_terms(double ce, double se, double sq, uint32_t batch, float l2,
			 struct az_loss *loss);

/* The whole minibatch's forward pass and loss; with want_grad also ws's gradients w.r.t. the
 * logits and the value pre-activation (each divided by batch). */
void az_train_forward_loss(const struct az_model *m, uint32_t batch, const float *x,
			   const float *pi, const float *z, float l2, struct az_train_ws *ws,
			   int want_grad, struct az_loss *loss);

#endif
