"""btl-ofi's refusals, word for word, and their judges (no tests here).

Each message below is the text a user sees between the dashed lines, word for
word: a change of help-mpi-btl-ofi.txt must change this file too. "{c}" stands
for the component's name and "{processes}" for the ranks that declined
(processes()). test_bad_input.py tries every bad input against them;
test_provider_names.py, test_domain_choice.py and test_node_local.py use the
same texts and judges."""

import re
import socket

import check_sets
import fabric
import launcher
import outcome

# no compare-and-swap here: the fallback osc/rdma + btl/vader itself crashes in
# MPI_Compare_and_swap on Win.Create windows, which is not what these cases test
PLAN = [
    check_sets.op_check("put", "create_du8", "fence", "int64", 8),
    check_sets.op_check("get", "create_du8", "lock_shared", "int64", 8),
    check_sets.op_check("acc", "create_du8", "lock_all", "int64", 1, mpi_op="SUM"),
    check_sets.op_check("fop", "create_du8", "flush", "int64", 1, mpi_op="SUM"),
]

DISABLING = "btl-ofi is disabling itself; Open MPI continues without"

MALFORMED = '''btl-ofi cannot read a provider list it was given: names are separated by
single commas, with no spaces and no empty items (for example
"shm,tcp;ofi_rxm"); only the include list may begin with "^", which leaves
out the names that follow, as in FI_PROVIDER. btl-ofi is disabling itself;
Open MPI continues without it.

  Parameter:  btl_{c}_{which}
  Value:      "{value}"
  Bad item:   "{item}"
  Processes:  {processes}'''

INCLUDE_EXCLUDE = f'''btl-ofi was given both a provider include list and an exclude list; only
one may be set. {DISABLING} it.

  btl_{{c}}_provider_include = "shm"
  btl_{{c}}_provider_exclude = "sockets"
  Processes:  {{processes}}'''

NOT_FOUND = '''A provider name btl-ofi was given matches no libfabric provider that offers
reliable-datagram endpoints with RMA and atomics on this host. Names match
as in FI_PROVIDER: a core provider ("tcp") stands for every stack over it
("tcp;ofi_rxm"), a full name as fi_info prints it for that stack only.
btl-ofi is disabling itself; Open MPI continues without it.

  Parameter:  btl_{c}_provider_include
  Unknown:    nosuchprov
  Available:  {available}
  FI_PROVIDER = {fi_provider}
  Processes:  {processes}'''

LACKS_CAPS = '''The libfabric provider named for btl-ofi offers reliable-datagram endpoints
here, but not the RMA and atomics that one-sided MPI needs. btl-ofi is
disabling itself; Open MPI continues without it.

  Provider:   {provider}
  Lacks:      {lacks}
  Available:  {available}
  Processes:  {processes}'''

BAD_MR_MODE = '''btl-ofi cannot read the memory-registration modes it was given: give "none"
or a comma-separated subset of virt_addr, prov_key, allocated, local,
endpoint, or a number made of those bits. btl-ofi is disabling itself; Open
MPI continues without it.

  Parameter:  btl_{c}_mr_mode
  Value:      "bogus"
  Processes:  {processes}'''

OUT_OF_RANGE = '''An MCA parameter of btl-ofi is not an integer in its range. btl-ofi is
disabling itself; Open MPI continues without it.

  Parameter:  btl_{c}_{param}
  Value:      "{value}"
  Valid:      an integer from {low} to {high}
  Processes:  {processes}'''

BAD_CHOICE = '''An MCA parameter of btl-ofi has a value it does not know. btl-ofi is
disabling itself; Open MPI continues without it.

  Parameter:  btl_{c}_completion
  Value:      "sometimes"
  Valid:      one of auto, delivery, read_proof, local
  Processes:  {processes}'''

NO_PROVIDER = '''No libfabric provider here offers what btl-ofi needs: reliable-datagram
endpoints, RMA and atomics, a memory-registration mode it serves, and the
completion semantics asked for. btl-ofi is disabling itself; Open MPI
continues without it.

  btl_{c}_provider_include = (all)
  btl_{c}_provider_exclude = {exclude}
  btl_{c}_completion = auto
  FI_PROVIDER = {fi_provider}
  Processes:  {processes}'''

ATOMICS_MISSING = '''The libfabric providers left for btl-ofi can serve no atomics: they name
FI_ATOMIC but have no 64-bit compare-and-swap, which one-sided MPI needs
(each was opened and asked), and btl-ofi could not send atomics as messages
instead (no FI_MSG, or btl_ofi_atomics=native). btl-ofi is disabling
itself; Open MPI continues without it.

  Provider:   {provider}
  Processes:  {processes}'''

MR_DECLINED = '''The libfabric provider chosen for btl-ofi needs memory-registration modes
that btl-ofi does not serve or may not accept. btl-ofi is disabling itself;
Open MPI continues without it.

  Provider:   {provider}
  Needs:      {needs}
  Allowed:    btl_{c}_mr_mode = local|virt_addr|allocated|prov_key|endpoint
  Served:     local|virt_addr|allocated|prov_key|endpoint
  Processes:  {processes}'''

BROKEN = '''The libfabric provider named for btl-ofi is known not to work for one-sided
MPI in this version, so btl-ofi declines it. btl-ofi is disabling itself;
Open MPI continues without it.

  Provider:   {provider} (provider version {version})
  Reason:     {reason}
  Processes:  {processes}'''


def processes(nranks):
    """The last field of a message every rank declined for: all ranks, this host
    (Open MPI's node name: the host name up to its first dot)."""
    return f"{nranks} of {nranks} (ranks 0-{nranks - 1}) on {socket.gethostname().split('.')[0]}"


def available():
    return ",".join(p.name for p in fabric.rdm_rma_atomic_providers()) or "(none)"


def run_and_judge(tmp_path, nranks, expected, what, component, ours=None, **kw):
    launch = launcher.run_mpi(nranks, {"checks": PLAN}, timeout=90, workdir=tmp_path,
                              ours=ours, **kw)
    text = expected.replace("{c}", component).replace("{processes}", processes(nranks))
    outcome.judge_bad_input(launch, text, f"{what}, {nranks} ranks", len(PLAN)).apply()
    return launch


NO_SEND_BTL = '''Open MPI's pml ob1 carries MPI's two-sided traffic, which every program
needs (window creation itself is a collective), through BTLs that send
messages. btl-ofi carries one-sided traffic only, and no BTL in the list
sends to some of the processes. Open MPI would crash at the first message
to them; btl-ofi leaves them unreachable instead, so that MPI says so and
the job ends. Add a BTL that reaches them to the list.

  BTL list:    {btls}
  No sender:   to the processes {where}
  For example: --mca btl self,{node},tcp,{c}
  Process:     rank 0 on {host}'''
# Open MPI's words for it: bml/r2's and MPI_Init's messages (mpirun 4.1 loses one or the
# other now and then, NOTES.txt 11)
UNREACHABLE = re.compile(r"unable to reach each other|at least one MPI process is unreachable")


def judge_no_sender(run, expected, what):
    """A BTL list that leaves pml ob1 no BTL sending to some peers (btl-ofi has no send
    path): btl-ofi's message, word for word and once (rank 0 says it), Open MPI's own
    unreachable message (unless mpirun 4.1 lost it), and the job ended with an error, not a
    crash or a hang. Without
    btl-ofi's refusal Open MPI 4.1.4 and 5.0.7 crash at the first send (SIGSEGV in
    mca_pml_ob1_isend, as they do with their own one-sided btl/ofi). mpirun 4.1's
    ORTE_ERROR_LOG is let pass here: it comes with Open MPI's messages of several ranks
    (NOTES.txt 11), which btl-ofi cannot stop, and which it may lose altogether.
    run: a launcher.Launch or launcher.Run."""
    text = run.stdout + "\n" + run.stderr
    tail = f"{run.stdout[-1500:]}\n{run.stderr[-2500:]}"
    assert not run.timed_out, f"{what}: timed out\n{tail}"
    assert run.returncode is not None and 0 < run.returncode <= 128 and \
        "Segmentation fault" not in text, f"{what}: exit {run.returncode}\n{tail}"
    messages = outcome.messages_in(text)
    assert messages == [expected], \
        f"{what}: {len(messages)} message(s)\n{outcome.text_difference(expected, messages)}"
    # mpirun 4.1 may lose every show_help message of the ranks, Open MPI's abort lines
    # included (it logs an ORTE_ERROR_LOG in show_help.c for each, NOTES.txt 11): then the
    # error exit above is all that is left of them
    lost = re.search(r"ORTE_ERROR_LOG: .*/show_help\.c", text)
    assert UNREACHABLE.search(text) or lost, \
        f"{what}: no unreachable message of Open MPI\n{tail}"


REGISTER_FAILED = '''btl-ofi could not register memory with the libfabric provider, so the MPI
call that needed it (creating or attaching a window, or one operation) gets
an error; windows and operations already made are not affected.'''


DOMAIN_NOT_FOUND = '''A domain name btl-ofi was given matches no domain (and no fabric) of the
libfabric providers it may use on this host. Names and patterns match the
"domain:" and "fabric:" lines of fi_info; a network interface that is down
or has no address is not listed by libfabric. btl-ofi is disabling itself;
Open MPI continues without it.

  Parameter:  btl_{c}_domain_include
  Unknown:    {unknown}
  Available:  {available}
  Processes:  {processes}'''

DOMAIN_NONE_LEFT = '''The domain list btl-ofi was given leaves no domain of a provider that
offers what btl-ofi needs (reliable-datagram endpoints, RMA, a
memory-registration mode it serves, the completion asked for). btl-ofi is
disabling itself; Open MPI continues without it.

  btl_{c}_domain_exclude = {excluded}
  Available:  {available}
  Processes:  {processes}'''

DOMAIN_MALFORMED = '''btl-ofi cannot read a domain list it was given: names of libfabric domains
or fabrics as fi_info prints them ("domain:" and "fabric:" lines, such as
mlx5_0, cxi1, eth1 or 10.0.0.0/24), or shell patterns of them ("cxi*"),
separated by single commas, with no spaces and no empty items. btl-ofi is
disabling itself; Open MPI continues without it.

  Parameter:  btl_{c}_domain_include
  Value:      "{value}"
  Bad item:   "{item}"
  Processes:  {processes}'''

DOMAIN_BOTH = '''btl-ofi was given both a domain include list and a domain exclude list;
only one may be set. btl-ofi is disabling itself; Open MPI continues
without it.

  btl_{c}_domain_include = "eth0"
  btl_{c}_domain_exclude = "lo"
  Processes:  {processes}'''
