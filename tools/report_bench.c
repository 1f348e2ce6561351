/* SPDX-License-Identifier: MIT */
/* `azrun report`'s benchmark plots and table (tools/report_bench.h). */
#include "tools/report_bench.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>

#define C4_PLOTS 3 /* az_report_bench_files[0..2]; Tangled's follow */

const char *const az_report_bench_files[AZ_REPORT_BENCH_FILES] = {
	"bench_agent.png", "bench_policy.png", "bench_tactics.png", "bench_tangled.png",
	"bench_rollout.png"};

static const char *const titles[AZ_REPORT_BENCH_FILES] = {
	"Benchmark: mistakes of the agent", "Benchmark: mistakes of the raw policy",
	"Benchmark: tactics", "Benchmark: mistakes on solved Tangled positions",
	"Benchmark: score against rollout MCTS"};

static const char *const captions[AZ_REPORT_BENCH_FILES] = {
	"AlphaZero.jl's metric on Pascal Pons' Connect Four sets: the share of the agent's moves "
	"(the search at the run's --sims, no noise, most visited move) that change the "
	"game-theoretic outcome (win to draw or loss, draw to loss), by the exact solver; one line "
	"per set; the best network after each benchmarked iteration's arena.",
	"The same for the raw policy: the network's most likely legal move, without search.",
	"Success rates on positions from random games where the side to move wins at once while "
	"the opponent threatens too (win in one), or must block the opponent's only threat "
	"(forced block); solid: agent, dashed: raw policy.",
	"AlphaZero.jl's metric on positions from uniformly random games with K uncoloured edges "
	"(uK), labelled by the exact solver: the share of moves that change the game-theoretic "
	"outcome; solid: the agent (the search at the run's --sims, no noise), dashed: the raw "
	"policy; the best network after each benchmarked iteration's arena.",
	("The agent's score (wins + draws / 2) against plain MCTS with random playouts at the same "
	 "simulations per move, colours alternated.")};

static int has_bench(const struct az_metric_row *r)
{
	for (int k = 0; k < AZ_RUN_BENCH_SETS; k++)
		if (!isnan(r->bench_policy[k]) || !isnan(r->bench_agent[k]))
			return 1;
	return 0;
}

static int has_tangled(const struct az_metric_row *r)
{
	return r->bench_depths > 0 || !isnan(r->bench_vs_rollout);
}

/* The run's Tangled depths: those of its first row with them (a run keeps its sets). */
static const struct az_metric_row *tangled_first(const struct az_run_info *ri)
{
	for (size_t i = 0; i < ri->nrows; i++)
		if (has_tangled(&ri->rows[i]))
			return &ri->rows[i];
	return NULL;
}

static size_t c4_rows(const struct az_run_info *ri)
{
	size_t n = 0;
	for (size_t i = 0; i < ri->nrows; i++)
		n += (size_t)has_bench(&ri->rows[i]);
	return n;
}

size_t az_report_bench_rows(const struct az_run_info *ri)
{
	size_t c4 = c4_rows(ri), n = 0;
	for (size_t i = 0; c4 == 0 && i < ri->nrows; i++)
		n += (size_t)has_tangled(&ri->rows[i]);
	return c4 ? c4 : n;
}

size_t az_report_bench_plots(const struct az_run_info *ri, size_t *first)
{
	*first = c4_rows(ri) || !tangled_first(ri) ? 0 : C4_PLOTS;
	return !az_report_bench_rows(ri) ? 0 : *first ? AZ_REPORT_BENCH_FILES - C4_PLOTS
						  : C4_PLOTS;
}

static void put_pct(FILE *f, double v)
{
	if (isnan(v))
		fputs("?", f);
	else
		fprintf(f, "%.6g", 100 * v);
}

static void pct(FILE *f, double v)
{
	if (isnan(v))
		fputs("?", f);
	else
		fprintf(f, "%.0f", 100 * v);
}

/* ---- the benchmark table of the report page, in Markdown (md) or HTML ---- */

/* The table's heading, its note (about: sentences, then where its data is) and the header
 * row's first cell, "iteration". */
static void table_open(FILE *f, int md, const char *about)
{
	if (md)
		fprintf(f, "\n## Benchmark\n\n%s Data: [bench.tsv](bench.tsv).\n\n| iteration |",
			about);
	else
		fprintf(f, "<h2>Benchmark</h2>\n<p>%s Data: <a href=\"bench.tsv\">bench.tsv</a>."
			"</p>\n<table>\n<tr><th>iteration</th>", about);
}

/* One more header cell. */
static void table_column(FILE *f, int md, const char *name)
{
	fprintf(f, md ? " %s |" : "<th>%s</th>", name);
}

/* The end of the header row of `columns` cells besides "iteration" (in Markdown, the
 * alignment row follows). */
static void table_head_end(FILE *f, int md, int columns)
{
	fputs(md ? "\n|---:|" : "</tr>\n", f);
	for (int k = 0; md && k < columns; k++)
		fputs("---:|", f);
	if (md)
		fputc('\n', f);
}

/* A body row opens with its iteration; each further cell starts with table_cell(). */
static void table_row(FILE *f, int md, double iteration)
{
	fprintf(f, "%s%.0f", md ? "| " : "<tr><td>", iteration);
}

static void table_cell(FILE *f, int md)
{
	fputs(md ? " | " : "</td><td>", f);
}

static void table_row_end(FILE *f, int md)
{
	fputs(md ? " |\n" : "</td></tr>\n", f);
}

static void table_close(FILE *f, int md)
{
	if (!md)
		fputs("</table>\n", f);
}

/* ---- bench.tsv ---- */

/* What bench.tsv holds, in percent: "iteration", then n columns of the raw policy
 * (policy_<name>), n of the agent (agent_<name>) and, with vs_rollout, Tangled's score against
 * rollout MCTS; a row per metrics row that has() accepts. first is the run's first benchmarked
 * row (Tangled's depths), for name() and value(). */
struct tsv_layout {
	int n;
	int vs_rollout;
	const char *note; /* the header's closing comment */
	int (*has)(const struct az_metric_row *r);
	void (*name)(char *buf, size_t len, const struct az_metric_row *first, int k);
	double (*value)(const struct az_metric_row *r, const struct az_metric_row *first, int k,
			int agent);
	const struct az_metric_row *first;
};

/* Write layout l of ri to f and close f: 0, or -EIO. */
static int write_tsv(FILE *f, const struct az_run_info *ri, const struct tsv_layout *l)
{
	char name[32];

	fputs("# iteration", f);
	for (int pass = 0; pass < 2; pass++)
		for (int k = 0; k < l->n; k++) {
			l->name(name, sizeof(name), l->first, k);
			fprintf(f, "\t%s_%s", pass ? "agent" : "policy", name);
		}
	fprintf(f, "%s\t%s\n", l->vs_rollout ? "\tvs_rollout" : "", l->note);
	for (size_t i = 0; i < ri->nrows; i++) {
		const struct az_metric_row *r = &ri->rows[i];
		if (!l->has(r))
			continue;
		fprintf(f, "%.0f", r->iteration);
		for (int pass = 0; pass < 2; pass++)
			for (int k = 0; k < l->n; k++) {
				fputc('\t', f);
				put_pct(f, l->value(r, l->first, k, pass));
			}
		if (l->vs_rollout) {
			fputc('\t', f);
			put_pct(f, r->bench_vs_rollout);
		}
		fputc('\n', f);
	}
	return fclose(f) == 0 ? 0 : -EIO;
}

/* ---- Tangled (azrun --bench auto): bench.tsv is iteration, policy_u<K>..., agent_u<K>...,
 * vs_rollout, in percent, for the depths of the run's first benchmark ---- */

/* Row r's mistake rate at the k-th depth of the run's first benchmark (first): the raw
 * policy's or the agent's; NaN when r did not measure that depth. */
static double tangled_value(const struct az_metric_row *r, const struct az_metric_row *first, int k,
			    int agent)
{
	double v = NAN;
	for (int j = 0; j < r->bench_depths; j++)
		if (r->bench_depth[j] == first->bench_depth[k])
			v = agent ? r->bench_uagent[j] : r->bench_upolicy[j];
	return v;
}

static void tangled_name(char *buf, size_t len, const struct az_metric_row *first, int k)
{
	snprintf(buf, len, "u%d", first->bench_depth[k]);
}

static int tangled_data(FILE *f, const struct az_run_info *ri)
{
	const struct az_metric_row *d = tangled_first(ri);
	const struct tsv_layout l = {
		.n = d->bench_depths,
		.vs_rollout = 1,
		.note = "(percent: mistakes, then the score against rollout MCTS)",
		.has = has_tangled,
		.name = tangled_name,
		.value = tangled_value,
		.first = d,
	};

	return write_tsv(f, ri, &l);
}

static void tangled_script(FILE *f, const struct az_run_info *ri)
{
	const struct az_metric_row *d = tangled_first(ri);
	int n = d->bench_depths;
	fprintf(f, "\nB = 'bench.tsv'\nunset arrow\nunset label\nset yrange [0:*]\n"
		"set offsets 0, 0, graph 0.05, 0\nset ylabel 'mistakes (%%)'\n"
		"set output '%s'\nset title '%s (%% of moves that change the solved outcome)'\n"
		"plot ", az_report_bench_files[C4_PLOTS], titles[C4_PLOTS]);
	for (int k = 0, i = 0; k < n; k++)
		for (int agent = 1; agent >= 0; agent--, i++)
			fprintf(f, "%sB using 1:%d with linespoints lc %d dt %d pt %d title "
				"'u%d %s'", i ? ", \\\n     " : "", 2 + k + (agent ? n : 0), k + 1,
				agent ? 1 : 2, agent ? 7 : 6, d->bench_depth[k],
				agent ? "agent" : "raw policy");
	fprintf(f, "\nset output '%s'\nset title '%s (%%)'\nset ylabel 'score (%%)'\n"
		"set yrange [0:100]\nplot B using 1:%d with linespoints lc 1 pt 7 title "
		"'agent vs rollout MCTS'\nset autoscale y\n", az_report_bench_files[C4_PLOTS + 1],
		titles[C4_PLOTS + 1], 2 + 2 * n);
}

static void tangled_page(FILE *f, const struct az_run_info *ri, int md)
{
	const struct az_metric_row *d = tangled_first(ri);
	char name[16];

	table_open(f, md, "Raw policy / agent mistakes in percent per depth (uK: K uncoloured "
		   "edges), and the agent's score against rollout MCTS.");
	for (int k = 0; k < d->bench_depths; k++) {
		snprintf(name, sizeof(name), "u%d", d->bench_depth[k]);
		table_column(f, md, name);
	}
	table_column(f, md, "vs rollout");
	table_head_end(f, md, d->bench_depths + 1);
	for (size_t i = 0; i < ri->nrows; i++) {
		const struct az_metric_row *r = &ri->rows[i];
		if (!has_tangled(r))
			continue;
		table_row(f, md, r->iteration);
		for (int k = 0; k < d->bench_depths; k++) {
			table_cell(f, md);
			for (int agent = 0; agent < 2; agent++) {
				if (agent)
					fputc('/', f);
				pct(f, tangled_value(r, d, k, agent));
			}
		}
		table_cell(f, md);
		pct(f, r->bench_vs_rollout);
		table_row_end(f, md);
	}
	table_close(f, md);
}

/* ---- both ---- */

/* Connect Four's bench.tsv: policy_<set>..., agent_<set>... for each of az_run_bench_sets. */
static void c4_name(char *buf, size_t len, const struct az_metric_row *first, int k)
{
	(void)first;
	snprintf(buf, len, "%s", az_run_bench_sets[k].key);
}

static double c4_value(const struct az_metric_row *r, const struct az_metric_row *first, int k,
		       int agent)
{
	(void)first;
	return agent ? r->bench_agent[k] : r->bench_policy[k];
}

static const struct tsv_layout c4_layout = {
	.n = AZ_RUN_BENCH_SETS,
	.note = "(percent: mistakes for the Pons sets, successes for win1 and block)",
	.has = has_bench,
	.name = c4_name,
	.value = c4_value,
};

int az_report_bench_data(const char *path, const struct az_run_info *ri)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	if (!c4_rows(ri))
		return tangled_data(f, ri);
	return write_tsv(f, ri, &c4_layout);
}

/* bench.tsv's column of set k: the raw policy's (agent 0) or the agent's. */
static int column(int k, int agent)
{
	return 2 + k + (agent ? AZ_RUN_BENCH_SETS : 0);
}

void az_report_bench_script(FILE *f, const struct az_run_info *ri)
{
	if (!c4_rows(ri)) {
		tangled_script(f, ri);
		return;
	}
	fputs("\nB = 'bench.tsv'\nunset arrow\nunset label\nset yrange [0:*]\n"
	      "set offsets 0, 0, graph 0.05, 0\nset ylabel 'mistakes (%)'\n", f);
	for (int agent = 1; agent >= 0; agent--) {
		fprintf(f, "set output '%s'\nset title '%s (%% of moves that change the solved "
			"outcome)'\nplot ", az_report_bench_files[!agent], titles[!agent]);
		for (int k = 0; k < AZ_RUN_BENCH_PONS; k++)
			fprintf(f, "%sB using 1:%d with linespoints lc %d pt 7 title '%s (%s)'",
				k ? ", \\\n     " : "", column(k, agent), k + 1,
				az_run_bench_sets[k].key, az_run_bench_sets[k].title);
		fputs("\n\n", f);
	}
	fprintf(f, "set output '%s'\nset title '%s (success rate, %%)'\nset ylabel 'success (%%)'\n"
		"set yrange [0:100]\nplot ", az_report_bench_files[2], titles[2]);
	for (int k = AZ_RUN_BENCH_PONS, n = 0; k < AZ_RUN_BENCH_SETS; k++)
		for (int agent = 1; agent >= 0; agent--, n++)
			fprintf(f, "%sB using 1:%d with linespoints lc %d dt %d pt %d title '%s, %s'",
				n ? ", \\\n     " : "", column(k, agent), k - AZ_RUN_BENCH_PONS + 1,
				agent ? 1 : 2, agent ? 7 : 6, az_run_bench_sets[k].title,
				agent ? "agent" : "raw policy");
	fputs("\nset autoscale y\n", f);
}

void az_report_bench_page(FILE *f, const struct az_run_info *ri, int md, int with_plots)
{
	size_t first, n = az_report_bench_plots(ri, &first);
	if (!n)
		return;
	for (size_t i = first; with_plots && i < first + n; i++) {
		if (md)
			fprintf(f, "\n## %s\n\n%s\n\n![%s](%s)\n", titles[i], captions[i], titles[i],
				az_report_bench_files[i]);
		else
			fprintf(f, "<h2>%s</h2>\n<p>%s</p>\n<p><a href=\"%s\"><img src=\"%s\" "
				"alt=\"%s\"></a></p>\n", titles[i], captions[i],
				az_report_bench_files[i], az_report_bench_files[i], titles[i]);
	}
	if (first) {
		tangled_page(f, ri, md);
		return;
	}
	table_open(f, md, "Raw policy / agent, in percent: mistakes on Pons' sets, successes on "
		   "the tactical sets.");
	for (int k = 0; k < AZ_RUN_BENCH_SETS; k++)
		table_column(f, md, az_run_bench_sets[k].key);
	table_head_end(f, md, AZ_RUN_BENCH_SETS);
	for (size_t i = 0; i < ri->nrows; i++) {
		const struct az_metric_row *r = &ri->rows[i];
		if (!has_bench(r))
			continue;
		table_row(f, md, r->iteration);
		for (int k = 0; k < AZ_RUN_BENCH_SETS; k++) {
			table_cell(f, md);
			pct(f, r->bench_policy[k]);
			fputc('/', f);
			pct(f, r->bench_agent[k]);
		}
		table_row_end(f, md);
	}
	table_close(f, md);
}
