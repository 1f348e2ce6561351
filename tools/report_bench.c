/* SPDX-License-Identifier: MIT */
/* `azrun report`'s benchmark plots and table (tools/report_bench.h). */
#include "tools/report_bench.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>

const char *const az_report_bench_files[AZ_REPORT_BENCH_PLOTS] = {
	"bench_agent.png", "bench_policy.png", "bench_tactics.png"};

static const char *const titles[AZ_REPORT_BENCH_PLOTS] = {
	"Benchmark: mistakes of the agent", "Benchmark: mistakes of the raw policy",
	"Benchmark: tactics"};

static const char *const captions[AZ_REPORT_BENCH_PLOTS] = {
	"AlphaZero.jl's metric on Pascal Pons' Connect Four sets: the share of the agent's moves "
	"(the search at the run's --sims, no noise, most visited move) that change the "
	"game-theoretic outcome (win to draw or loss, draw to loss), by the exact solver; one line "
	"per set; the best network after each benchmarked iteration's arena.",
	"The same for the raw policy: the network's most likely legal move, without search.",
	"Success rates on positions from random games where the side to move wins at once while "
	"the opponent threatens too (win in one), or must block the opponent's only threat "
	"(forced block); solid: agent, dashed: raw policy."};

static int has_bench(const struct az_metric_row *r)
{
	for (int k = 0; k < AZ_RUN_BENCH_SETS; k++)
		if (!isnan(r->bench_policy[k]) || !isnan(r->bench_agent[k]))
			return 1;
	return 0;
}

size_t az_report_bench_rows(const struct az_run_info *ri)
{
	size_t n = 0;
	for (size_t i = 0; i < ri->nrows; i++)
		n += (size_t)has_bench(&ri->rows[i]);
	return n;
}

static void put_pct(FILE *f, double v)
{
	if (isnan(v))
		fputs("?", f);
	else
		fprintf(f, "%.6g", 100 * v);
}

int az_report_bench_data(const char *path, const struct az_run_info *ri)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	fputs("# iteration", f);
	for (int pass = 0; pass < 2; pass++)
		for (int k = 0; k < AZ_RUN_BENCH_SETS; k++)
			fprintf(f, "\t%s_%s", pass ? "agent" : "policy", az_run_bench_sets[k].key);
	fputs("\t(percent: mistakes for the Pons sets, successes for win1 and block)\n", f);
	for (size_t i = 0; i < ri->nrows; i++) {
		const struct az_metric_row *r = &ri->rows[i];
		if (!has_bench(r))
			continue;
		fprintf(f, "%.0f", r->iteration);
		for (int pass = 0; pass < 2; pass++)
			for (int k = 0; k < AZ_RUN_BENCH_SETS; k++) {
				fputc('\t', f);
				put_pct(f, pass ? r->bench_agent[k] : r->bench_policy[k]);
			}
		fputc('\n', f);
	}
	return fclose(f) == 0 ? 0 : -EIO;
}

/* bench.tsv's column of set k: the raw policy's (agent 0) or the agent's. */
static int column(int k, int agent)
{
	return 2 + k + (agent ? AZ_RUN_BENCH_SETS : 0);
}

void az_report_bench_script(FILE *f)
{
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

static void pct(FILE *f, double v)
{
	if (isnan(v))
		fputs("?", f);
	else
		fprintf(f, "%.0f", 100 * v);
}

void az_report_bench_page(FILE *f, const struct az_run_info *ri, int md, int with_plots)
{
	const char *sep = md ? " | " : "</td><td>";
	if (!az_report_bench_rows(ri))
		return;
	for (int i = 0; with_plots && i < AZ_REPORT_BENCH_PLOTS; i++) {
		if (md)
			fprintf(f, "\n## %s\n\n%s\n\n![%s](%s)\n", titles[i], captions[i], titles[i],
				az_report_bench_files[i]);
		else
			fprintf(f, "<h2>%s</h2>\n<p>%s</p>\n<p><a href=\"%s\"><img src=\"%s\" "
				"alt=\"%s\"></a></p>\n", titles[i], captions[i],
				az_report_bench_files[i], az_report_bench_files[i], titles[i]);
	}
	fputs(md ? "\n## Benchmark\n\nRaw policy / agent, in percent: mistakes on Pons' sets, "
	      "successes on the tactical sets. Data: [bench.tsv](bench.tsv).\n\n| iteration |"
	      : "<h2>Benchmark</h2>\n<p>Raw policy / agent, in percent: mistakes on Pons' sets, "
	      "successes on the tactical sets. Data: <a href=\"bench.tsv\">bench.tsv</a>.</p>\n"
	      "<table>\n<tr><th>iteration</th>", f);
	for (int k = 0; k < AZ_RUN_BENCH_SETS; k++)
		fprintf(f, md ? " %s |" : "<th>%s</th>", az_run_bench_sets[k].key);
	fputs(md ? "\n|---:|" : "</tr>\n", f);
	for (int k = 0; md && k < AZ_RUN_BENCH_SETS; k++)
		fputs("---:|", f);
	if (md)
		fputc('\n', f);
	for (size_t i = 0; i < ri->nrows; i++) {
		const struct az_metric_row *r = &ri->rows[i];
		if (!has_bench(r))
			continue;
		fprintf(f, "%s%.0f", md ? "| " : "<tr><td>", r->iteration);
		for (int k = 0; k < AZ_RUN_BENCH_SETS; k++) {
			fputs(sep, f);
			pct(f, r->bench_policy[k]);
			fputc('/', f);
			pct(f, r->bench_agent[k]);
		}
		fputs(md ? " |\n" : "</td></tr>\n", f);
	}
	if (!md)
		fputs("</table>\n", f);
}
