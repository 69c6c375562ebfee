source .device-kit/setup.sh
root=$PWD
source scripts/gpu_build.sh
rm -rf build-bench
(root=$PWD/bis-t0 gpu_build $PWD/bis-t0/build-bench normtune) &
(gpu_build $PWD/build-bench normtune) &
wait
for t in t0 t3; do
  nt=$PWD/build-bench/normtune; [ $t = t0 ] && nt=$PWD/bis-t0/build-bench/normtune
  NORMTUNE=$nt OUT=$OUT/$t bash scripts/ptx_audit.sh rmsnorm_bwd:bf16:2048x32768 layernorm_bwd:f16:2048x32768 layernorm_bwd:bf16:2048x32768 rmsnorm_bwd:f32:2048x32768 | tail -5
done
cd $OUT && tar -czf ptx.tar.gz t0 t3 && rm -rf t0 t3
