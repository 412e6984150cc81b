// SPDX-License-Identifier: GPL-2.0
/*
 * Command-line parsing shared by all proc files. Strict: a value must be
 * entirely valid, or the write fails with -EINVAL and nothing changes.
 */
#include <linux/kernel.h>
#include <linux/uaccess.h>
#include <linux/ctype.h>
#include <linux/inet.h>
#include <linux/etherdevice.h>
#include "rfcpg.h"

/*
 * Copy a write into buf as a NUL-terminated string. Trailing whitespace and
 * NUL bytes are dropped (so both `echo cmd` and a bare `cmd`, with or without
 * a terminating NUL, work); any other control or non-ASCII byte is refused.
 */
int pg_read_cmd(const char __user *ubuf, size_t count, char *buf, size_t size)
{
	size_t i, len = count;

	if (!count)
		return -EINVAL;
	if (count >= size)
		return -E2BIG;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	while (len && (buf[len - 1] == '\0' || isspace(buf[len - 1])))
		buf[--len] = '\0';
	if (!len)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		unsigned char c = buf[i];

		if (c == '\t' || c == '\n' || c == '\r')
			continue;
		if (c < 0x20 || c >= 0x7f)
			return -EINVAL;
	}
	return 0;
}

static bool pg_is_sep(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '"' ||
	       c == '=';
}

/*
 * Split in place on blanks, quotes and '='; -E2BIG beyond max tokens.
 * A write of separators only ("=", "\"", "= \"") passes pg_read_cmd but
 * has no token: -EINVAL, so no caller ever sees argc == 0.
 */
int pg_split(char *buf, char **argv, int max)
{
	int argc = 0;
	char *p = buf;

	for (;;) {
		while (*p && pg_is_sep(*p))
			*p++ = '\0';
		if (!*p)
			break;
		if (argc == max)
			return -E2BIG;
		argv[argc++] = p;
		while (*p && !pg_is_sep(*p))
			p++;
	}
	return argc ? argc : -EINVAL;
}

/* Read and split one command write: argc >= 1, or -errno. */
int pg_get_args(const char __user *ubuf, size_t count, char *buf, char **argv,
		int max)
{
	int err = pg_read_cmd(ubuf, count, buf, PG_MAX_WRITE);

	return err ? err : pg_split(buf, argv, max);
}

/* The Result text for a pg_get_args() error. */
const char *pg_args_error(int err)
{
	if (err == -E2BIG)
		return "command too long or too many arguments";
	if (err == -EFAULT)
		return "bad address";
	return "empty command, separators only or control characters";
}

/* Plain decimal: digits only, no sign, no base prefix, no overflow. */
int pg_parse_u64(const char *s, u64 *v)
{
	const char *p;

	if (!*s)
		return -EINVAL;
	for (p = s; *p; p++)
		if (!isdigit(*p))
			return -EINVAL;
	return kstrtou64(s, 10, v) ? -EINVAL : 0;
}

int pg_parse_u32(const char *s, u32 *v, u32 max)
{
	u64 x;

	if (pg_parse_u64(s, &x) || x > max)
		return -EINVAL;
	*v = (u32)x;
	return 0;
}

int pg_parse_hex(const char *s, u32 *v, unsigned int maxdigits)
{
	const char *p;
	u32 x = 0;

	if (!*s || strlen(s) > maxdigits)
		return -EINVAL;
	for (p = s; *p; p++) {
		int d = hex_to_bin(*p);

		if (d < 0)
			return -EINVAL;
		x = (x << 4) | (u32)d;
	}
	*v = x;
	return 0;
}

int pg_parse_ip4(const char *s, u32 *host_order)
{
	const char *end;
	__be32 a;

	if (!in4_pton(s, -1, (u8 *)&a, '\0', &end) || *end)
		return -EINVAL;
	*host_order = ntohl(a);
	return 0;
}

int pg_parse_ip6(const char *s, struct in6_addr *a)
{
	const char *end;

	if (!in6_pton(s, -1, a->s6_addr, '\0', &end) || *end)
		return -EINVAL;
	return 0;
}

int pg_parse_mac(const char *s, u8 *mac)
{
	if (strlen(s) != 17 || !mac_pton(s, mac))
		return -EINVAL;
	return 0;
}
