/* SPDX-License-Identifier: MIT */
/* Running an external program and waiting for it (base/spawn.h). */
#include "base/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"

/* In the child: redirect, set the environment, exec. Never returns. */
static void child(char *const argv[], const struct az_spawn_opts *o, int out_fd)
{
	if (o->cwd && chdir(o->cwd) < 0)
		_exit(126);
	int fd = out_fd;
	if (fd < 0 && o->log_path)
		fd = open(o->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
	}
	for (const char *const *e = o->env; e && *e; e++) {
		char name[128];
		const char *eq = strchr(*e, '=');
		if (!eq || (size_t)(eq - *e) >= sizeof(name))
			continue;
		memcpy(name, *e, (size_t)(eq - *e));
		name[eq - *e] = 0;
		setenv(name, eq + 1, 1);
	}
	execvp(argv[0], argv);
	_exit(127);
}

/* Copy what the child writes into o->capture until EOF or the deadline. 0 or -ETIMEDOUT. */
static int drain(int fd, const struct az_spawn_opts *o)
{
	size_t len = 0;
	double end = o->timeout_s > 0 ? az_now() + o->timeout_s : 0;
	int rc = 0;
	for (;;) {
		int left_ms = -1;
		if (end > 0) {
			left_ms = (int)((end - az_now()) * 1000);
			if (left_ms <= 0) {
				rc = -ETIMEDOUT;
				break;
			}
		}
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, left_ms) <= 0)
			continue; /* timeout (checked above) or EINTR */
		char buf[4096];
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			break; /* EOF: the child closed its output (exiting) */
		size_t room = o->capture_len - 1 - len;
		size_t take = (size_t)n < room ? (size_t)n : room;
		memcpy(o->capture + len, buf, take);
		len += take;
	}
	o->capture[len] = '\0';
	return rc;
}

int az_spawn_wait(char *const argv[], const struct az_spawn_opts *o)
{
	static const struct az_spawn_opts none;
	int fd[2] = {-1, -1};
	if (!o)
		o = &none;
	int capture = o->capture && o->capture_len > 0;
	if (capture && pipe(fd) < 0)
		return -errno;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		int e = -errno;
		if (capture) {
			close(fd[0]);
			close(fd[1]);
		}
		return e;
	}
	if (pid == 0) {
		if (capture)
			close(fd[0]);
		child(argv, o, capture ? fd[1] : -1);
	}
	int rc = 0;
	if (capture) {
		close(fd[1]);
		rc = drain(fd[0], o);
		close(fd[0]);
	} else if (o->timeout_s > 0) {
		double end = az_now() + o->timeout_s;
		for (;;) {
			siginfo_t si;
			memset(&si, 0, sizeof(si));
			/* WNOWAIT: leave it a zombie, reaped below. */
			if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 ||
			    si.si_pid == pid)
				break;
			if (az_now() >= end) {
				rc = -ETIMEDOUT;
				break;
			}
			struct timespec ts = {0, 10 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
	}
	if (rc == -ETIMEDOUT)
		kill(pid, SIGKILL);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (rc < 0)
		return rc;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int az_spawn_find(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");
		struct stat sb;
		snprintf(out, len, "%.*s/%s", (int)n, path, name);
		if (n && stat(out, &sb) == 0 && S_ISREG(sb.st_mode) && access(out, X_OK) == 0)
			return 0;
		path += n + (path[n] == ':');
	}
	return -ENOENT;
}
