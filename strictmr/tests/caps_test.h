/*
 * strictmr_caps_test's shared parts: the NIC of a run and what each file gives the others
 * (caps_test.c: checks and main; caps_nic.c: getinfo, set-up, operations; the scenarios in
 * caps_posts.c, caps_atomics.c, caps_registration.c and caps_profile.c).
 */
#ifndef STRICTMR_CAPS_TEST_H
#define STRICTMR_CAPS_TEST_H

#include "fixture.h"

#define CORE_MR_MODES (FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)
#define PAGE 4096

struct nic {
    struct fixture f;
    uint8_t *tbuf, *lbuf; /* target region on b, local region on a: REGION bytes each */
    struct fid_mr *tmr, *lmr;
    uint64_t key, base;
    void *ldesc;
    uint64_t next_key;
    struct fi_info *core; /* the core's info under the same hints, for its limits */
    uint64_t provoked[STRICTMR_EV_COUNT];
};

/* ---------------------------------------------------------------- caps_test.c */
/* Prints PASS or FAIL and the message, counts it; returns ok. */
bool check(bool ok, const char *fmt, ...);
uint64_t event(struct nic *n, int ev);
/* The call was refused with err and moved op_refused by exactly one. */
bool refused(struct nic *n, const char *what, uint64_t before, int ret, int err);

/* ---------------------------------------------------------------- caps_nic.c */
/* What fi_getinfo answers for hints on our provider; op_flags go to tx_attr. */
int getinfo_ret(const char *prov, uint64_t caps, uint64_t mr_mode, uint64_t op_flags,
                struct fi_info **out);
/* "shm;ofi_strictmr" -> "shm" (to be freed) */
char *core_name(const char *prov);
int nic_open(struct nic *n, const char *prov, uint64_t caps, bool buffers);
void nic_close(struct nic *n);
/* A posted operation's completion: 0 fine, else the error completion's or the wait's error. */
int completed(struct nic *n, int ret);
void fill(uint8_t *buf, size_t len, uint8_t seed);
int write_msg(struct nic *n, size_t len, uint64_t flags);
int rma_write(struct nic *n, size_t len);
int rma_read(struct nic *n, size_t len);
/* Target memory equals want, driving both sides. */
bool await_equal(struct nic *n, const volatile void *at, const void *want, size_t len);
bool await_u64(struct nic *n, const volatile void *at, uint64_t want);
/* The write of len bytes (a writemsg with flags, or a plain write) reached the target intact. */
bool write_lands(struct nic *n, size_t len, uint64_t flags, uint8_t seed);
int fetch_add(struct nic *n, enum fi_datatype dt, size_t count, uint64_t *operand,
              uint64_t *result);

/* ---------------------------------------------------------------- scenarios */
/* caps_posts.c */
void scenario_dc(struct nic *n, const char *prov, bool off);
void scenario_inject(struct nic *n, size_t limit);
void scenario_max_rma(struct nic *n, size_t limit);
void scenario_write_only(struct nic *n, const char *prov);
/* caps_atomics.c */
typedef int (*valid_fn)(struct fid_ep *, enum fi_datatype, enum fi_op, size_t *);

void expect_valid(struct nic *n, const char *name, valid_fn fn, enum fi_datatype dt, enum fi_op op,
                  bool offered, size_t max_count);
bool fetch_add_works(struct nic *n);
void atomics_nic(struct nic *n);
void atomics_all(struct nic *n);
void atomics_none(struct nic *n, const char *prov);
/* caps_registration.c */
void scenario_reg_cost(struct nic *n, unsigned us, unsigned page_ns);
void scenario_reg_limit(struct nic *n, size_t limit);
/* caps_profile.c */
void scenario_profile(struct nic *n, const char *prov, char **argv);

#endif
