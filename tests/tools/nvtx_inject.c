/* SPDX-License-Identifier: MIT */
/* A tiny NVTX injection library (NVTX3's NVTX_INJECTION64_PATH mechanism, the one nsys uses):
 * once loaded by the first NVTX call of a process, it takes over nvtxRangePushA and
 * nvtxRangePop and appends one line per call ("push NAME" / "pop") to
 * $AZ_NVTX_LOG_DIR/nvtx-PID.log, a file per process (forked children inherit the hooks and get
 * their own file on their first call). tests/tools/test_nvtx.sh checks the files. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

static pid_t log_pid;
static int log_fd = -1;

/* The current process's log, opened on its first event (after a fork: a new file). */
static int log_file(void)
{
	pid_t pid = getpid();
	const char *dir = getenv("AZ_NVTX_LOG_DIR");
	char path[512];

	if (pid == log_pid)
		return log_fd;
	log_pid = pid;
	log_fd = -1;
	if (!dir)
		return -1;
	snprintf(path, sizeof(path), "%s/nvtx-%d.log", dir, (int)pid);
	log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	return log_fd;
}

static void log_line(const char *text)
{
	int fd = log_file();

	if (fd >= 0 && write(fd, text, strlen(text)) < 0)
		log_fd = -1;
}

static int NVTX_API push_a(const char *name)
{
	char line[160];

	snprintf(line, sizeof(line), "push %s\n", name ? name : "(null)");
	log_line(line);
	return 0;
}

static int NVTX_API pop(void)
{
	log_line("pop\n");
	return 0;
}

/* The entry point NVTX3 looks up after dlopen(): install our two core callbacks. Returns 1 on
 * success (NVTX then routes the calls here), 0 to be unloaded. */
int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table);
int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table)
{
	const NvtxExportTableCallbacks *cb =
		(const NvtxExportTableCallbacks *)get_table(NVTX_ETID_CALLBACKS);
	NvtxFunctionTable table = NULL;
	unsigned int size = 0;

	if (!cb || !cb->GetModuleFunctionTable ||
	    !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) || !table ||
	    size <= NVTX_CBID_CORE_RangePop)
		return 0;
	*table[NVTX_CBID_CORE_RangePushA] = (NvtxFunctionPointer)push_a;
	*table[NVTX_CBID_CORE_RangePop] = (NvtxFunctionPointer)pop;
	return 1;
}
