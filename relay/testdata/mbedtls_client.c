/*
 * A DTLS 1.2 PSK client on mbed TLS, for relay's TestDTLSMbedTLS: an
 * implementation independent of pion and OpenSSL, and the library
 * UnityTLS is commonly said to build on (unverified). It handshakes with
 * the identity given in hex (the allocation id's 16 bytes, as Unity
 * Transport sends it), sends one record (a BIND) again every 500 ms until
 * a record comes back, and prints that record in hex.
 *
 *   mbedtls_client HOST PORT KEY_HEX IDENTITY_HEX MESSAGE_HEX [CIPHERSUITE]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/ssl.h>
#include <mbedtls/timing.h>

static size_t unhex(const char *s, unsigned char *out, size_t max) {
	size_t n = strlen(s) / 2;
	if (n > max) return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned int b;
		if (sscanf(s + 2 * i, "%2x", &b) != 1) return 0;
		out[i] = (unsigned char)b;
	}
	return n;
}

int main(int argc, char **argv) {
	if (argc < 6) {
		fprintf(stderr, "usage: %s HOST PORT KEY_HEX IDENTITY_HEX MESSAGE_HEX [CIPHERSUITE]\n", argv[0]);
		return 2;
	}
	unsigned char key[64], id[64], msg[2048], buf[2048];
	size_t keylen = unhex(argv[3], key, sizeof key), idlen = unhex(argv[4], id, sizeof id),
	       msglen = unhex(argv[5], msg, sizeof msg);
	int suites[2] = {0, 0};
	mbedtls_net_context net;
	mbedtls_ssl_context ssl;
	mbedtls_ssl_config conf;
	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
	mbedtls_timing_delay_context timer;
	int ret;

	mbedtls_net_init(&net);
	mbedtls_ssl_init(&ssl);
	mbedtls_ssl_config_init(&conf);
	mbedtls_entropy_init(&entropy);
	mbedtls_ctr_drbg_init(&drbg);
	if ((ret = mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &entropy, NULL, 0)) != 0) goto fail;
	if ((ret = mbedtls_net_connect(&net, argv[1], argv[2], MBEDTLS_NET_PROTO_UDP)) != 0) goto fail;
	if ((ret = mbedtls_ssl_config_defaults(&conf, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_TRANSPORT_DATAGRAM,
	                                       MBEDTLS_SSL_PRESET_DEFAULT)) != 0) goto fail;
	mbedtls_ssl_conf_rng(&conf, mbedtls_ctr_drbg_random, &drbg);
	if ((ret = mbedtls_ssl_conf_psk(&conf, key, keylen, id, idlen)) != 0) goto fail;
	if (argc > 6) {
		suites[0] = mbedtls_ssl_get_ciphersuite_id(argv[6]);
		if (suites[0] == 0) {
			fprintf(stderr, "unknown ciphersuite %s\n", argv[6]);
			return 2;
		}
		mbedtls_ssl_conf_ciphersuites(&conf, suites);
	}
	mbedtls_ssl_conf_read_timeout(&conf, 500);
	if ((ret = mbedtls_ssl_setup(&ssl, &conf)) != 0) goto fail;
	mbedtls_ssl_set_bio(&ssl, &net, mbedtls_net_send, mbedtls_net_recv, mbedtls_net_recv_timeout);
	mbedtls_ssl_set_timer_cb(&ssl, &timer, mbedtls_timing_set_delay, mbedtls_timing_get_delay);
	while ((ret = mbedtls_ssl_handshake(&ssl)) != 0) {
		if (ret != MBEDTLS_ERR_SSL_WANT_READ && ret != MBEDTLS_ERR_SSL_WANT_WRITE) goto fail;
	}
	fprintf(stderr, "handshake done: %s\n", mbedtls_ssl_get_ciphersuite(&ssl));
	for (int tries = 0; tries < 20; tries++) {
		if ((ret = mbedtls_ssl_write(&ssl, msg, msglen)) < 0) goto fail;
		ret = mbedtls_ssl_read(&ssl, buf, sizeof buf);
		if (ret == MBEDTLS_ERR_SSL_TIMEOUT) continue;
		if (ret <= 0) goto fail;
		for (int i = 0; i < ret; i++) printf("%02x", buf[i]);
		printf("\n");
		mbedtls_ssl_close_notify(&ssl);
		return 0;
	}
	fprintf(stderr, "no answer\n");
	return 1;
fail:
	{
		char err[200];
		mbedtls_strerror(ret, err, sizeof err);
		fprintf(stderr, "mbedtls: -0x%04x %s\n", (unsigned)-ret, err);
	}
	return 1;
}
