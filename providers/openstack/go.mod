module github.com/ccm-project/ccm/providers/openstack

go 1.26.0

require github.com/ccm-project/ccm/common v0.0.0

replace github.com/ccm-project/ccm/common => ../../common
