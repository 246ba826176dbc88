#!/bin/sh
# The kselftest of the user space ABI (tools/testing/selftests/malloc_types):
# the stream's layout and version, the text file's header and rows, the
# sysctls and the permissions. Its KTAP goes to the console prefixed with
# "MT-KSELFTEST: ", where judge.py counts each of its results.
t=/bin/malloc_types_test
[ -x $t ] || { echo "FAILED: $t is not in the image"; exit 1; }
$t >/tmp/kselftest.out 2>&1
rc=$?
sed 's/^/MT-KSELFTEST: /' /tmp/kselftest.out
[ $rc -eq 0 ] || echo "FAILED: $t exited $rc"
exit $rc
