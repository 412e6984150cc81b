// SPDX-License-Identifier: GPL-2.0
/*
 * pgfuzz: malformed writes to a /proc/net/pktgen file. Every write must fail
 * (return -1) and leave an error in the file's "Result:" line, except the
 * forms upstream accepts and reports (its kselftest: a device keyword
 * without its value, an unknown xmit_mode or flag): those must succeed or
 * fail, and leave a Result that is no OK and names the keyword ("reported").
 * Runs in the guest; written in C because an interpreted loop is slow under
 * emulation.
 *
 *   pgfuzz PATH KIND N SEED [MODE]
 *       KIND: dev | thread | ctrl | rx
 *       MODE: random (default: random bytes, words and table entries) |
 *             grammar (built from the command grammar: separators only,
 *             quotes and '=' forms, every keyword of KIND with an empty,
 *             negative, huge, non-decimal or overlong value)
 *
 * Prints one JSON line: {"n":..,"accepted":..,"reported":..,"bad_result":..,
 * "errnos":{"22":..,...},"first_accepted":"..","first_bad":".."}.
 * Exit status 0 when nothing was accepted and every Result was an error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXLEN 8192

/* Set by the generators: the write may be accepted if Result names may_kw. */
static int may_accept;
static const char *may_kw;

static void accept_reported(const char *kw)
{
	may_accept = 1;
	may_kw = kw;
}

static uint64_t rng_state;

static uint32_t rnd(void)
{
	/* xorshift64*: deterministic per seed */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 2685821657736338717ULL) >> 32);
}

static uint32_t below(uint32_t n)
{
	return (uint32_t)(((uint64_t)rnd() * n) >> 32);
}

#define PICK(arr) (arr[below(sizeof(arr) / sizeof(arr[0]))])

static const char *const num_dev[] = {
	"count", "pkt_size", "min_pkt_size", "max_pkt_size", "debug", "frags",
	"delay", "rate", "ratep", "udp_src_min", "udp_src_max", "udp_dst_min",
	"udp_dst_max", "clone_skb", "burst", "burst_frames", "dst_stride", "stream_id", "node",
	"start_offset", "src_mac_count",
	"dst_mac_count", "flows", "flowlen", "queue_map_min", "queue_map_max",
	"vlan_id", "vlan_p", "vlan_cfi", "svlan_id", "svlan_p", "svlan_cfi",
	"skb_priority",
};

static const char *const arg_dev[] = {
	"count", "pkt_size", "delay", "ratep", "imix_weights", "xmit_mode", "flag",
	"dst", "dst_min", "dst_max", "src_min", "src_max", "dst6", "src6",
	"dst6_min", "dst6_max", "dst_mac", "src_mac", "mpls", "tos",
	"traffic_class", "vlan_id", "udp_src_min",
};

static const char *const bad_dev[] = {
	"dst 300.1.1.1", "dst 1.2.3", "dst 1.2.3.4.5", "dst a.b.c.d", "dst ::1",
	"src_min 256.0.0.1", "src_min 1..2.3", "dst_max -1.2.3.4",
	"dst6 2001:::1", "dst6 gggg::1", "dst6 1.2.3.4", "src6 ::1::2",
	"dst_mac 00:11:22", "dst_mac 00:11:22:33:44:55:66", "dst_mac zz:11:22:33:44:55",
	"dst_mac 001122334455", "src_mac 0:1:2:3:4:5",
	"flag BOGUS", "flag !NOPE", "flag ipv6", "flag IPSEC",
	"xmit_mode bogus", "xmit_mode start", "xmit_mode netif_receive_skb",
	"tos 1ff", "tos xyz", "tos 0x10", "traffic_class 100", "traffic_class g0",
	"vlan_p 8", "vlan_p 99", "vlan_cfi 2", "svlan_p 8",
	"rate 0", "rate x", "rate 10G", "ratep 0", "ratep 1.5",
	"count 1x", "count 0x10", "count +5", "count 1e6", "count 1,000",
	"udp_src_min 65536", "udp_dst_max 70000", "flows 65537",
	"pkt_size 65536", "pkt_size 99999",
	"imix_weights 64,1 x", "imix_weights 64", "imix_weights 64;1",
	"imix_weights 64,0", "imix_weights ,1",
	"mpls g", "mpls 1,,2", "mpls 123456789",
	"mpls 1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1",
	"clone_skb 1", "burst 2", "spi x", "spi -1",
	"burst_frames 65537", "burst_frames -1", "burst_frames 1x",
	"stream_id 65536", "stream_id -1", "stream_id 1x",
	"start_offset 1000000001", "start_offset -1", "start_offset 1x",
};

static const char *const bad_thread[] = {
	"add_device", "add_device\n", "add_device a/b", "add_device @1",
	"add_device lo a", "rem_device_all x", "max_before_softirq -1",
	"max_before_softirq 99999999999999999999999", "max_before_softirq 1 2",
	"add_device nosuch0", "add_device nosuch1@3",
};

static const char *const bad_rx[] = {
	"rx", "rx\n", "rx a b", "rx nosuch0", "statistics", "statistics foo",
	"statistics time x", "display", "display html", "action", "action accept",
	"rx_reset now", "rx_disable 1", "statistics -1", "display 999999999999",
	"timestamp", "timestamp nic", "timestamp hook stack", "timestamp -1",
	"pkt_size", "pkt_size 59", "pkt_size 65550", "pkt_size 60 61",
	"rx lo lo", "rx lo lo lo lo lo", "rx lo nosuch0",
	"streams", "streams 1.2.3", "streams 10.0.0.1,10.0.0.1", "streams ,",
	"streams 10.0.0.1 10.0.0.2", "streams ::1::2",
	"streams sid:0", "streams sid:65536", "streams sid:", "streams sid:1,sid:1",
	"streams sid:x", "streams sid:-1", "streams sid=1",
};

static const char *const reserved[] = {
	"start", "stop", "reset", "rx", "rx_reset", "rx_disable", "rem_device_all",
	"max_before_softirq", "clear_counters", "display", "statistics", "action",
	"timestamp", "add_device", "spi",	/* spi takes a value: "spi" alone is reported */
};

static int is_command(const char *w)
{
	size_t i;

	for (i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		if (!strcmp(w, reserved[i]))
			return 1;
	for (i = 0; i < sizeof(num_dev) / sizeof(num_dev[0]); i++)
		if (!strcmp(w, num_dev[i]))
			return 1;
	for (i = 0; i < sizeof(arg_dev) / sizeof(arg_dev[0]); i++)
		if (!strcmp(w, arg_dev[i]))
			return 1;
	return 0;
}

static size_t word(char *out)
{
	static const char alpha[] = "abcdefghijklmnopqrstuvwxyz_";
	size_t n;

	do {
		size_t i;

		n = 1 + below(20);
		for (i = 0; i < n; i++)
			out[i] = alpha[below(sizeof(alpha) - 1)];
		out[n] = '\0';
	} while (is_command(out));
	return n;
}

static size_t copy_str(char *out, const char *s)
{
	size_t n = strlen(s);

	memcpy(out, s, n);
	return n;
}

/* n bytes, embedded NULs included */
static size_t copy_bytes(char *out, const char *s, size_t n)
{
	memcpy(out, s, n);
	return n;
}

/* One malformed write for KIND into out; returns its length. */
static size_t malformed(char *out, const char *kind)
{
	uint32_t c = below(10);
	size_t n = 0, i;

	may_accept = 0;
	if (c == 0) {				/* longer than the module's 1 KiB */
		n = 1025 + below(5000);
		memset(out, 'a', n);
		return n;
	}
	if (c == 1) {				/* binary, with a control byte */
		static const unsigned char ctl[] = {
			1, 2, 3, 4, 5, 6, 7, 8, 14, 15, 16, 20, 27, 31, 127, 128, 200, 255 };
		n = 1 + below(300);
		for (i = 0; i < n; i++)
			out[i] = (char)below(256);
		out[below((uint32_t)n)] = (char)PICK(ctl);
		return n;
	}
	if (c == 2) {				/* empty or blank */
		static const char *const blank[] = { "", " ", "\n", " \t\r\n" };
		uint32_t k = below(6);

		if (k == 4) {
			memset(out, 0, 3);
			return 3;
		}
		if (k == 5) {
			out[0] = '\0';
			return 1;
		}
		return copy_str(out, blank[k]);
	}
	if (c == 3) {				/* unknown word */
		static const char *const tail[] = { "", " 1", " x y", "\n" };

		n = word(out);
		n += copy_str(out + n, PICK(tail));
		return n;
	}
	if (!strcmp(kind, "dev")) {
		switch (c) {
		case 4:				/* huge number */
			n = copy_str(out, PICK(num_dev));
			out[n++] = ' ';
			for (i = 21 + below(40); i; i--)
				out[n++] = '9';
			return n;
		case 5:				/* negative */
			return (size_t)sprintf(out, "%s -%u", PICK(num_dev), 1 + below(1000000000));
		case 6:				/* missing argument */
			may_kw = PICK(arg_dev);
			n = copy_str(out, may_kw);
			accept_reported(may_kw);
			if (below(2))
				out[n++] = '\n';
			return n;
		case 7: {
			const char *b = PICK(bad_dev);

			/* unknown flag or mode: accepted and reported (not IPSEC) */
			if (!strncmp(b, "xmit_mode ", 10))
				accept_reported("xmit_mode");
			else if (!strncmp(b, "flag ", 5) && strcmp(b, "flag IPSEC"))
				accept_reported("flag");
			return copy_str(out, b);
		}
		case 8:				/* extra arguments */
			return (size_t)sprintf(out, "%s 1 2", PICK(num_dev));
		default:
			n = copy_str(out, "clear_counters ");
			return n + word(out + n);
		}
	}
	if (!strcmp(kind, "thread")) {
		if (c == 4) {
			n = copy_str(out, "add_device ");
			for (i = 32 + below(170); i; i--)
				out[n++] = 'x';
			return n;
		}
		n = copy_str(out, PICK(bad_thread));
		return n;
	}
	if (!strcmp(kind, "ctrl")) {
		if (c == 4) {
			for (i = 1 + below(60); i; i--)
				out[n++] = '9';
			return n;
		}
		/* keep embedded NULs of the table entries: use fixed lengths */
		switch (below(11)) {
		case 0: return copy_str(out, "start now");
		case 1: return copy_str(out, "stop 1");
		case 2: return copy_str(out, "reset all");
		case 3: return copy_str(out, "starts");
		case 4: return copy_str(out, "sto");
		case 5: return copy_str(out, "START");
		case 6: return copy_bytes(out, "start\x01", 6);
		case 7: return copy_bytes(out, "st\0op", 5);
		case 8: return copy_bytes(out, "\x7fstop", 5);
		case 9: return copy_str(out, "stop stop");
		default: return copy_str(out, "-1");
		}
	}
	if (c == 4) {
		n = copy_str(out, "rx ");
		for (i = 16 + below(90); i; i--)
			out[n++] = 'y';
		return n;
	}
	return copy_str(out, PICK(bad_rx));
}

/* ---- grammar mode ---- */

/* Keywords of each file that take one value; "" ends a list. */
static const char *const kw_dev[] = {
	"count", "pkt_size", "min_pkt_size", "max_pkt_size", "imix_weights",
	"debug", "frags", "delay", "rate", "ratep", "udp_src_min", "udp_src_max",
	"udp_dst_min", "udp_dst_max", "clone_skb", "burst", "burst_frames", "dst_stride",
	"stream_id", "start_offset", "node", "xmit_mode",
	"flag", "dst", "dst_min", "dst_max", "src_min", "src_max", "dst6", "src6",
	"dst6_min", "dst6_max", "dst_mac", "src_mac", "src_mac_count",
	"dst_mac_count", "flows", "flowlen", "queue_map_min", "queue_map_max",
	"mpls", "vlan_id", "vlan_p", "vlan_cfi", "svlan_id", "svlan_p",
	"svlan_cfi", "tos", "traffic_class", "skb_priority", "spi", "",
};

static const char *const kw_thread[] = { "add_device", "max_before_softirq", "" };

static const char *const kw_ctrl[] = { "" };

static const char *const kw_rx[] = {
	"rx", "statistics", "display", "action", "timestamp", "pkt_size", "streams", "",
};

/* Keywords that take no value: only an extra value is malformed. */
static const char *const kw0_dev[] = { "clear_counters", "" };

static const char *const kw0_thread[] = { "rem_device_all", "" };

static const char *const kw0_ctrl[] = { "start", "stop", "reset", "" };

static const char *const kw0_rx[] = { "rx_reset", "rx_disable", "" };

/* Keywords whose bare form is valid (an empty value is not malformed). */
static int empty_ok(const char *kw)
{
	return !strcmp(kw, "max_before_softirq");
}

static const char *const seps[] = {
	" ", "\t", "=", "\"", "= \"", "\" = \"", "==", " = ", "\"\"", "=\"",
};

static size_t list_len(const char *const *l)
{
	size_t n = 0;

	while (l[n][0])
		n++;
	return n;
}

static size_t put_seps(char *out, uint32_t max)
{
	uint32_t k = below(max + 1);
	size_t n = 0;

	while (k--)
		n += copy_str(out + n, PICK(seps));
	return n;
}

/* A value no keyword accepts: negative, huge, non-decimal or overlong. */
static size_t bad_value(char *out)
{
	static const char *const nondec[] = {
		"+5", "1.5", "0x1g", "x9", "-0", "1_000", "09z", "--1", "1e3z",
	};
	size_t n = 0, i;

	switch (below(4)) {
	case 0:
		return (size_t)sprintf(out, "-%u", below(4294967295U));
	case 1:				/* beyond u64 */
		for (i = 21 + below(40); i; i--)
			out[n++] = '9';
		return n;
	case 2:
		return copy_str(out, PICK(nondec));
	default:			/* longer than any name or number field */
		for (i = 16 + below(300); i; i--)
			out[n++] = (char)('g' + below(20));
		return n;
	}
}

static size_t grammar(char *out, const char *kind)
{
	const char *const *kw, *const *kw0;
	size_t n = 0, n1, n0, len;
	const char *k;
	int quote = below(3) == 0;
	int dev = !strcmp(kind, "dev");

	may_accept = 0;
	if (!strcmp(kind, "dev")) {
		kw = kw_dev;
		kw0 = kw0_dev;
	} else if (!strcmp(kind, "thread")) {
		kw = kw_thread;
		kw0 = kw0_thread;
	} else if (!strcmp(kind, "ctrl")) {
		kw = kw_ctrl;
		kw0 = kw0_ctrl;
	} else {
		kw = kw_rx;
		kw0 = kw0_rx;
	}
	n1 = list_len(kw);
	n0 = list_len(kw0);

	switch (below(8)) {
	case 0:				/* separators only */
		n = copy_str(out, PICK(seps));
		n += put_seps(out + n, 4);
		break;
	case 1:				/* an overlong keyword */
		k = below((uint32_t)(n1 + n0)) < n1 && n1 ? kw[below((uint32_t)n1)] :
			kw0[below((uint32_t)n0)];
		n = put_seps(out, 2);
		n += copy_str(out + n, k);
		for (len = 40 + below(200); n < len; )
			out[n++] = 'x';
		break;
	case 2:				/* a value for a keyword that takes none */
		n = put_seps(out, 2);
		n += copy_str(out + n, kw0[below((uint32_t)n0)]);
		n += copy_str(out + n, PICK(seps));
		n += below(2) ? bad_value(out + n) : copy_str(out + n, "1");
		break;
	case 3:				/* keyword, empty value */
		if (!n1)
			return grammar(out, kind);
		k = kw[below((uint32_t)n1)];
		if (empty_ok(k))
			return grammar(out, kind);
		n = put_seps(out, 2);
		n += copy_str(out + n, k);
		n += put_seps(out + n, 3);
		if (dev)
			accept_reported(k);
		break;
	default:			/* keyword, malformed value */
		if (!n1)
			return grammar(out, kind);
		n = put_seps(out, 2);
		if (quote)
			out[n++] = '"';
		k = kw[below((uint32_t)n1)];
		if (dev && (!strcmp(k, "flag") || !strcmp(k, "xmit_mode")))
			accept_reported(k);
		n += copy_str(out + n, k);
		if (quote)
			out[n++] = '"';
		n += copy_str(out + n, PICK(seps));
		if (quote)
			out[n++] = '"';
		n += bad_value(out + n);
		if (quote)
			out[n++] = '"';
		n += put_seps(out + n, 2);
		break;
	}
	if (below(2))
		out[n++] = '\n';
	return n;
}

/* Does the Result line name kw (any case; upstream says "Flag")? */
static int names_kw(const char *res, const char *kw)
{
	size_t k = strlen(kw), i;
	const char *p;

	for (p = res; *p && *p != '\n'; p++) {
		for (i = 0; i < k && p[i]; i++)
			if ((p[i] | 0x20) != (kw[i] | 0x20))
				break;
		if (i == k)
			return 1;
	}
	return 0;
}

static void json_str(const char *s, size_t n)
{
	size_t i;

	putchar('"');
	for (i = 0; i < n && i < 60; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20 || ch >= 0x7f)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

int main(int argc, char **argv)
{
	static char buf[MAXLEN], rbuf[1 << 20];
	long counts[256] = { 0 };
	long n, i, accepted = 0, bad = 0, reported = 0;
	char first_acc[MAXLEN], first_bad[256];
	size_t first_acc_len = 0, first_bad_len = 0;
	int wfd, rfd, e, comma = 0, use_grammar;

	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: pgfuzz PATH dev|thread|ctrl|rx N SEED [random|grammar]\n");
		return 2;
	}
	use_grammar = argc == 6 && !strcmp(argv[5], "grammar");
	n = atol(argv[3]);
	rng_state = (uint64_t)strtoull(argv[4], NULL, 10) * 0x9e3779b97f4a7c15ULL + 1;
	wfd = open(argv[1], O_WRONLY);
	rfd = open(argv[1], O_RDONLY);
	if (wfd < 0 || rfd < 0) {
		perror(argv[1]);
		return 2;
	}
	for (i = 0; i < n; i++) {
		size_t len = use_grammar ? grammar(buf, argv[2]) : malformed(buf, argv[2]);
		ssize_t ret = write(wfd, buf, len);
		ssize_t r;
		char *res;

		if (ret >= 0 && !may_accept) {
			if (!accepted++) {
				memcpy(first_acc, buf, len);
				first_acc_len = len;
			}
			continue;
		}
		e = errno;
		if (ret < 0)
			counts[e & 255]++;
		r = pread(rfd, rbuf, sizeof(rbuf) - 1, 0);
		rbuf[r > 0 ? r : 0] = '\0';
		res = strstr(rbuf, "Result:");
		while (res && strstr(res + 1, "Result:"))
			res = strstr(res + 1, "Result:");
		if (!res || !strncmp(res + 8, "OK", 2) || !strncmp(res + 8, "NA", 2) ||
		    !strncmp(res + 8, "Starting", 8) ||
		    (ret >= 0 && !names_kw(res, may_kw))) {
			if (!bad++) {
				first_bad_len = (size_t)snprintf(first_bad, sizeof(first_bad), "%.100s",
								 res ? res : "(no Result line)");
			}
		} else if (ret >= 0) {
			reported++;
		}
	}
	printf("{\"n\": %ld, \"accepted\": %ld, \"reported\": %ld, \"bad_result\": %ld, "
	       "\"errnos\": {", n, accepted, reported, bad);
	for (i = 0; i < 256; i++)
		if (counts[i]) {
			printf("%s\"%ld\": %ld", comma ? ", " : "", i, counts[i]);
			comma = 1;
		}
	printf("}, \"first_accepted\": ");
	json_str(first_acc, first_acc_len);
	printf(", \"first_bad\": ");
	json_str(first_bad, first_bad_len);
	printf("}\n");
	return accepted || bad;
}
