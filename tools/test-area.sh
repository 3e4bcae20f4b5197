# tools/test.sh --quick and --only FILTER: one area at a time (sourced by tools/test.sh after the
# set-up, with the test build under way; MODE, FILTERS, BUILD_ARGS and the limits are its).
#   --quick   every test that needs no VM (each crate's unit tests, tests/it but e2e::vm), clippy
#   --only    the tests whose names contain a FILTER, after the lab's assets when one is a VM test
# One test at a time, as in the full run, unless RUST_TEST_THREADS says otherwise.
export RUST_TEST_THREADS=${RUST_TEST_THREADS:-1}
stage "build the tests (compiling since the start)" $L_BUILD build_ready
if [ "$MODE" = quick ]; then
  stage "cargo test (every test that needs no VM: unit tests, tests/it but e2e::vm)" $L_REST \
    cargo test "${BUILD_ARGS[@]}" --no-fail-fast -- --include-ignored --skip e2e::vm::
  stage "cargo clippy" $L_CLIPPY cargo clippy --workspace --all-targets --locked -- -D warnings
  return 0
fi
mapfile -t AREA_TESTS < <(cargo test "${BUILD_ARGS[@]}" -q -- --list --include-ignored "${FILTERS[@]}" 2>/dev/null |
                          sed -n 's/: test$//p')
if [ ${#AREA_TESTS[@]} = 0 ]; then
  echo "test.sh: no test's name contains ${FILTERS[*]} (\`cargo test -- --list\` lists them all)"
  exit 1
fi
AREA_VM=0 AREA_ARM64=0 AREA_LIMIT=$L_REST AREA_ARGS=()
for t in "${AREA_TESTS[@]}"; do
  case $t in
    e2e::vm::arm64::*) AREA_VM=1 AREA_ARM64=1 ;;
    e2e::vm::*) AREA_VM=1 ;;
  esac
done
echo "== ${#AREA_TESTS[@]} tests contain ${FILTERS[*]}$([ $AREA_VM = 1 ] && echo ', VM tests among them: the lab assets first')"
if [ $AREA_VM = 1 ]; then
  job lab-assets $L_ASSETS nice -n 10 bash -c lab_assets &
  launched lab-assets
  stage "lab assets (vm-lab/assets.sh, bootos/tools.sh, vm-lab/os-image.sh)" $L_ASSETS ready lab-assets
  if [ $AREA_ARM64 = 1 ]; then
    stage "arm64 lab assets (vm-lab/assets.sh --arm64)" $L_ASSETS_ARM64 vm-lab/assets.sh --arm64 target/lab-assets/boot
  fi
  AREA_LIMIT=$((L_VM + L_QEMU)) AREA_ARGS=(--test-threads=1 --nocapture)
fi
# (Without the lines of the test binaries that hold none of them.)
area_tests() {
  cargo test "${BUILD_ARGS[@]}" --no-fail-fast -- --include-ignored "${AREA_ARGS[@]}" "${FILTERS[@]}" 2>&1 |
    grep --line-buffered -vE '^(running 0 tests|test result: ok\. 0 passed; 0 failed; 0 ignored; 0 measured; [0-9]+ filtered out.*|)$|^ +Running '
}
stage "the tests containing ${FILTERS[*]}" $AREA_LIMIT area_tests
