# Sourced on a GPU machine before running overlapsim-validate built elsewhere:
#   source validate/device_env.sh path/to/overlapsim-validate
# Finds libnccl.so.2, libcublas*.so.13 (or .12), and cuDNN 9 and NVRTC (the
# runner's attention) wherever they are (e.g. inside a
# Python environment's nvidia/ packages), adds the binary's lib/ folder (the
# yaml-cpp and fmt it was linked with travel there), and keeps
# NCCL_NVLS_ENABLE=0 (the machines are shared).
export NCCL_NVLS_ENABLE=0
_ovv_bin=${1:-.device/overlapsim-validate}
# A build carried xz-compressed (the device's copy of the working tree is
# limited in size): BINARY.xz and lib/*.xz next to it are unpacked once.
if [ ! -e "$_ovv_bin" ] && [ -e "$_ovv_bin.xz" ]; then xz -d -k "$_ovv_bin.xz" && chmod +x "$_ovv_bin"; fi
for _ovv_z in "$(dirname "$_ovv_bin")"/lib/*.xz; do
  [ -e "$_ovv_z" ] && [ ! -e "${_ovv_z%.xz}" ] && xz -d -k "$_ovv_z"
done
_ovv_dirs="$(cd "$(dirname "$_ovv_bin")" && pwd)/lib"
# cuBLAS of CUDA 13, else 12 (the one the binary was built against is the one it loads).
for _ovv_lib in libnccl.so.2 'libcublas.so.1[32]' 'libcublasLt.so.1[32]' libcudnn.so.9 'libnvrtc.so.1[32]'; do
  _ovv_p=$(find / -xdev -name "$_ovv_lib" -not -path '*/proc/*' 2>/dev/null | sort -r | head -1)
  [ -n "$_ovv_p" ] && _ovv_dirs="$_ovv_dirs:$(dirname "$_ovv_p")"
done
export LD_LIBRARY_PATH="${_ovv_dirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset _ovv_bin _ovv_dirs _ovv_lib _ovv_p _ovv_z
