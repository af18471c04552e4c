source scripts/device_common.sh
SH="--shapes scripts/inputs/shapes-session35-wg-chain.txt --m 64,128"
F=templates/wq_gemm_wgmma.cuh
for late in 0 1; do
  sed -i "s/^#define WQ_WG_TRIGGER_LATE .*/#define WQ_WG_TRIGGER_LATE $late/" $F
  device_build lowbit_cli
  C=/tmp/c$late
  if [ $late = 0 ]; then echo "== plain" | tee -a $S; LOWBIT_CACHE_DIR=$C $B/lowbit bench wq_gemm $SH 2>&1 | grep -v "^#" | tee -a $S; fi
  echo "== chain late=$late cap" | tee -a $S; LOWBIT_CACHE_DIR=$C $B/lowbit bench wq_gemm $SH --chain 2>&1 | grep -v "^#" | tee -a $S
  echo "== chain late=$late nocap" | tee -a $S; LOWBIT_PROBE_NOCAP=1 LOWBIT_CACHE_DIR=$C $B/lowbit bench wq_gemm $SH --chain 2>&1 | grep -v "^#" | tee -a $S
done
