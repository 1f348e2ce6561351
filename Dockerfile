# SPDX-License-Identifier: MIT
# RingZero in a CUDA 13.0 development image: the Debian packages of tools/install-deps.sh (their
# Ubuntu 24.04 names), a Release build with the CUDA backend (architectures 80 89 90), and the
# test suite as the default command. The tests run in `docker run`, not in `docker build`: the
# replay store writes through io_uring, which Docker's default seccomp profile blocks (Docker 25+)
# and a build step cannot unblock. The gpu-labelled tests run when the container has --gpus and
# report Skipped otherwise. docs/docker.md.
FROM nvidia/cuda:13.0.0-devel-ubuntu24.04

# tools/install-deps.sh's list; libclang-rt-18-dev is the sanitizer/libFuzzer runtime of
# Ubuntu 24.04's clang (Debian 12's is libclang-rt-14-dev).
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        build-essential cmake pkg-config clang libclang-rt-18-dev libopenblas-dev liburing-dev \
        libcmocka-dev libcjson-dev libinih-dev zlib1g-dev gnuplot-nox python3 liblapacke-dev \
        libopenmpi-dev openmpi-bin \
    && rm -rf /var/lib/apt/lists/*

# Build and test as an ordinary user: some tests check permission errors, which root bypasses.
RUN useradd --create-home az && mkdir -p /src /runs && chown az:az /src /runs
USER az
WORKDIR /src
COPY --chown=az:az . /src

RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j"$(nproc)"

ENV OPENBLAS_NUM_THREADS=1
CMD ["ctest", "--test-dir", "build", "--output-on-failure"]
