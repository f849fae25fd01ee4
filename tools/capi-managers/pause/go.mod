// The pod sandbox's process (containerd's sandbox_image) for the project's real node: no dependency.
module capi-installer.dev/tools/capi-managers/pause

go 1.26.0
