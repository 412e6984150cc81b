// SPDX-License-Identifier: GPL-2.0
/*
 * The user-space baseline for bench/kmod_rx_cost.py: a UDP receiver that
 * reads with recvmmsg(), 64 datagrams per call, and counts them. It writes
 * "ready" to stdout once bound, then counts until no datagram arrived for
 * IDLE_MS after the first one (or for WAIT_MS before it), and prints the count.
 *
 *   kmod_recvmmsg ADDR PORT IDLE_MS WAIT_MS
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define BATCH 64

int main(int argc, char **argv)
{
	static char bufs[BATCH][2048];
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_in sa;
	struct timeval tv;
	long count = 0;
	int fd, i, rcvbuf = 4 << 20;

	if (argc != 5) {
		fprintf(stderr, "usage: kmod_recvmmsg ADDR PORT IDLE_MS WAIT_MS\n");
		return 2;
	}
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((unsigned short)atoi(argv[2]));
	if (fd < 0 || inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("bind");
		return 2;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf));
	for (i = 0; i < BATCH; i++) {
		iov[i].iov_base = bufs[i];
		iov[i].iov_len = sizeof(bufs[i]);
		memset(&msgs[i], 0, sizeof(msgs[i]));
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		int ms = count ? atoi(argv[3]) : atoi(argv[4]);
		int n;

		tv.tv_sec = ms / 1000;
		tv.tv_usec = (ms % 1000) * 1000;
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		n = recvmmsg(fd, msgs, BATCH, MSG_WAITFORONE, NULL);
		if (n <= 0)
			break;
		count += n;
	}
	printf("%ld\n", count);
	return 0;
}
