/* container.h — Sonar's SampleProcess.in_container: "true if deemed a part of a container". The
 * spec makes it a flag of the process, not of the node (a job may start a container without
 * running in one), and gives docker's rule: a descendant of a process whose name starts with
 * "containerd" that is itself a child of init. We also take a process whose own cgroup names a
 * container runtime (docker, podman, kubernetes, cri-containerd, LXC), and every process when
 * the /proc we read is itself a container's (fjord-push running in one without the host's PID
 * namespace: /.dockerenv, /run/.containerenv, a `container=` variable in PID 1's environment, or
 * a runtime in PID 1's cgroup). Every file is read under root, so fixtures can test all of it.
 * Stateless. */
#ifndef FJ_PUSH_CONTAINER_H
#define FJ_PUSH_CONTAINER_H

#include "buf.h"

#include <stdint.h>

/* 1 when root's own /proc belongs to a container (checked once per collector). */
int fj_container_view(const char *root);

/* 1 when the text of a /proc/PID/cgroup file names a container runtime. */
int fj_container_cgroup(const char *cgroup_text);

/* 1 when process pid (read under root) descends from a "containerd*" child of init. scratch is
 * reused. Unreadable ancestors end the walk with 0. */
int fj_container_ancestry(const char *root, uint32_t pid, fj_buf *scratch);

#endif
