# SPDX-License-Identifier: MIT
# Per-library include trees: the layers of STYLE.md section 2, enforced by the compiler.
#
# Includes are written from the repository root ("mcts/mcts.h"), but the root is on no target's
# include path. Each library's headers are staged instead, as symlinks, under
# ${AZ_INCLUDE_ROOT}/<target>/<folder>/, a tree that reaches other targets only through the
# library's usage requirements: a file that includes "train/trainer.h" compiles only if its target
# links az_train, directly or through a PUBLIC edge ("No such file or directory" otherwise).
# A library's private headers (every *_impl.h / *_impl.cuh and those named PRIVATE) go to
# ${AZ_INCLUDE_ROOT}/<target>.private/, on the library's own include path and on that of
# <target>_internal, an INTERFACE target that white-box tests link instead of <target>.
#
# The trees are made at configure time; the folder is globbed with CONFIGURE_DEPENDS, so a header
# added or removed re-runs CMake on the next build. The compiler opens headers through the links
# (their mtimes are the sources', so nothing rebuilds when CMake remakes them), and messages name
# them by the link's path, ${AZ_INCLUDE_ROOT}/<target>/<folder>/<header>.

set(AZ_INCLUDE_ROOT ${CMAKE_BINARY_DIR}/include)

# az_headers(<target> [FOLDER <dir>] [HEADERS <name>...] [PRIVATE <name>...] [EXCLUDE <name>...])
#   FOLDER   the headers' folder (relative to the current source dir; default: that dir itself)
#   HEADERS  the headers of <target> in FOLDER (default: every *.h and *.cuh there)
#   PRIVATE  further headers only <target> (and <target>_internal) may include
#   EXCLUDE  headers in FOLDER that belong to another target
# An executable gets both trees privately; a library the public one PUBLIC (INTERFACE for an
# INTERFACE library) and the private one PRIVATE. May be called more than once for a target
# (one call a folder).
function(az_headers target)
  cmake_parse_arguments(PARSE_ARGV 1 A "" "FOLDER" "HEADERS;PRIVATE;EXCLUDE")
  if(A_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "az_headers(${target}): unknown arguments ${A_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT A_FOLDER)
    set(A_FOLDER .)
  endif()
  get_filename_component(dir ${A_FOLDER} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
  file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${dir})
  if(rel STREQUAL "" OR rel MATCHES "^\\.\\.")
    message(FATAL_ERROR "az_headers(${target}): ${dir} is not a folder below the source root")
  endif()

  if(A_HEADERS)
    set(headers ${A_HEADERS})
  else()
    file(GLOB headers CONFIGURE_DEPENDS RELATIVE ${dir} ${dir}/*.h ${dir}/*.cuh)
  endif()
  if(A_EXCLUDE)
    list(REMOVE_ITEM headers ${A_EXCLUDE})
  endif()
  foreach(h IN LISTS A_PRIVATE)
    if(NOT h IN_LIST headers)
      message(FATAL_ERROR "az_headers(${target}): PRIVATE ${h} is not a header of ${rel}")
    endif()
  endforeach()

  set(pub ${AZ_INCLUDE_ROOT}/${target})
  set(priv ${AZ_INCLUDE_ROOT}/${target}.private)
  foreach(tree ${pub} ${priv})
    # The links of an earlier configure (a header since removed or made private) go first.
    file(GLOB old LIST_DIRECTORIES false ${tree}/${rel}/*)
    if(old)
      file(REMOVE ${old})
    endif()
    file(MAKE_DIRECTORY ${tree}/${rel})
  endforeach()
  set(n_priv 0)
  foreach(h IN LISTS headers)
    if(NOT EXISTS ${dir}/${h})
      message(FATAL_ERROR "az_headers(${target}): no header ${rel}/${h}")
    endif()
    if(h IN_LIST A_PRIVATE OR h MATCHES "_impl\\.(h|cuh)$")
      set(tree ${priv})
      math(EXPR n_priv "${n_priv} + 1")
    else()
      set(tree ${pub})
    endif()
    file(CREATE_LINK ${dir}/${h} ${tree}/${rel}/${h} SYMBOLIC)
  endforeach()

  get_target_property(type ${target} TYPE)
  if(type STREQUAL "EXECUTABLE")
    target_include_directories(${target} PRIVATE ${pub} ${priv})
  elseif(type STREQUAL "INTERFACE_LIBRARY")
    target_include_directories(${target} INTERFACE ${pub})
  else()
    target_include_directories(${target} PUBLIC ${pub} PRIVATE ${priv})
    if(n_priv GREATER 0)
      # White-box tests: <target> plus its private headers.
      if(NOT TARGET ${target}_internal)
        add_library(${target}_internal INTERFACE)
        target_link_libraries(${target}_internal INTERFACE ${target})
        target_include_directories(${target}_internal INTERFACE ${priv})
      endif()
    endif()
  endif()
endfunction()
