"""The emulated EC2's account, as the machine tests see it (docs/maintainers/machines.md).

Run with the python of the venv that tools/moto/build.sh makes (boto3 comes with moto), inside the
node's network namespace, where the emulated EC2 listens. One subcommand a call, JSON on stdout:

  wait       until the endpoint answers (moto starting)
  seed       the AWS account the OpenShift installer leaves for a cluster: a VPC with real DHCP
             options, a private subnet per zone, the node, load balancer and control plane security
             groups, the worker instance profile and an RHCOS-like AMI, named and tagged as the
             installer (its Cluster API based generation) names and tags them
  instances  every instance: id, state, placement, image, type, subnet, security groups (with its
             primary network interface's), instance profile, tags and the user data (base64, as EC2
             returns it)

Common options: --endpoint URL --region REGION. seed also takes --infra-id and --zones a,b,c.
"""

import argparse
import json
import sys
import time

import boto3
import botocore.exceptions


def client(args, service):
    return boto3.client(
        service,
        endpoint_url=args.endpoint,
        region_name=args.region,
        aws_access_key_id="machines",
        aws_secret_access_key="machines",
    )


def tags(pairs):
    return [{"Key": k, "Value": v} for k, v in pairs.items()]


def wait(args):
    deadline = time.monotonic() + args.timeout
    ec2 = client(args, "ec2")
    while True:
        try:
            ec2.describe_regions()
            return {"ready": True}
        except botocore.exceptions.EndpointConnectionError as e:
            if time.monotonic() > deadline:
                raise SystemExit(f"{args.endpoint} did not answer within {args.timeout}s: {e}")
            time.sleep(0.2)


def seed(args):
    infra = args.infra_id
    owned = {f"kubernetes.io/cluster/{infra}": "owned"}
    ec2 = client(args, "ec2")
    iam = client(args, "iam")

    vpc = ec2.create_vpc(
        CidrBlock="10.0.0.0/16",
        TagSpecifications=[
            {"ResourceType": "vpc", "Tags": tags({"Name": f"{infra}-vpc", **owned})}
        ],
    )["Vpc"]["VpcId"]
    # moto reports a new VPC's DHCP options as "default", which DescribeDhcpOptions then refuses;
    # the AWS provider reads them for the instance's private DNS name and panics without an answer.
    # The installer's VPCs have real ones.
    dhcp = ec2.create_dhcp_options(
        DhcpConfigurations=[
            {"Key": "domain-name", "Values": [f"{args.region}.compute.internal"]},
            {"Key": "domain-name-servers", "Values": ["AmazonProvidedDNS"]},
        ],
        TagSpecifications=[
            {
                "ResourceType": "dhcp-options",
                "Tags": tags({"Name": f"{infra}-dhcp-options", **owned}),
            }
        ],
    )["DhcpOptions"]["DhcpOptionsId"]
    ec2.associate_dhcp_options(DhcpOptionsId=dhcp, VpcId=vpc)

    subnets = {}
    for i, zone in enumerate(args.zones.split(",")):
        az = f"{args.region}{zone}"
        name = f"{infra}-subnet-private-{az}"
        subnets[name] = ec2.create_subnet(
            VpcId=vpc,
            CidrBlock=f"10.0.{64 + 32 * i}.0/19",
            AvailabilityZone=az,
            TagSpecifications=[
                {
                    "ResourceType": "subnet",
                    "Tags": tags(
                        {
                            "Name": name,
                            **owned,
                            "kubernetes.io/role/internal-elb": "",
                            "sigs.k8s.io/cluster-api-provider-aws/role": "private",
                        }
                    ),
                }
            ],
        )["Subnet"]["SubnetId"]

    security_groups = {}
    for role, description in [
        ("node", "Cluster API Node Security Group"),
        ("lb", "Cluster API load balancer security group"),
        ("controlplane", "Cluster API Control Plane Security Group"),
    ]:
        name = f"{infra}-{role}"
        security_groups[name] = ec2.create_security_group(
            GroupName=name,
            Description=description,
            VpcId=vpc,
            TagSpecifications=[
                {
                    "ResourceType": "security-group",
                    "Tags": tags(
                        {
                            "Name": name,
                            **owned,
                            "sigs.k8s.io/cluster-api-provider-aws/role": role,
                        }
                    ),
                }
            ],
        )["GroupId"]

    profile = f"{infra}-worker-profile"
    role = f"{infra}-worker-role"
    iam.create_role(
        RoleName=role,
        AssumeRolePolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "ec2.amazonaws.com"},
                        "Action": "sts:AssumeRole",
                    }
                ],
            }
        ),
        Tags=tags(owned),
    )
    iam.create_instance_profile(InstanceProfileName=profile, Tags=tags(owned))
    iam.add_role_to_instance_profile(InstanceProfileName=profile, RoleName=role)

    ami = ec2.register_image(
        Name=f"rhcos-9.6.20251015-1-x86_64-{infra}",
        Description="Red Hat Enterprise Linux CoreOS (stand-in of the machine tests)",
        Architecture="x86_64",
        RootDeviceName="/dev/xvda",
        VirtualizationType="hvm",
        EnaSupport=True,
        BlockDeviceMappings=[
            {
                "DeviceName": "/dev/xvda",
                "Ebs": {"VolumeSize": 16, "VolumeType": "gp3", "DeleteOnTermination": True},
            }
        ],
    )["ImageId"]
    ec2.create_tags(Resources=[ami], Tags=tags({"Name": f"{infra}-ami-{args.region}", **owned}))

    return {
        "vpc": vpc,
        "dhcp_options": dhcp,
        "subnets": subnets,
        "security_groups": security_groups,
        "instance_profile": profile,
        "ami": ami,
    }


def security_groups(instance):
    """The groups of the instance and of its primary network interface: EC2 reports the latter as the
    instance's, moto leaves the instance's own list empty when the groups came with the interface (as
    the AWS provider gives them)."""
    groups = {g["GroupId"] for g in instance.get("SecurityGroups", [])}
    for eni in instance.get("NetworkInterfaces", []):
        if eni.get("Attachment", {}).get("DeviceIndex", 0) == 0:
            groups.update(g["GroupId"] for g in eni.get("Groups", []))
    return sorted(groups)


def instances(args):
    ec2 = client(args, "ec2")
    out = []
    for reservation in ec2.describe_instances()["Reservations"]:
        for i in reservation["Instances"]:
            user_data = ec2.describe_instance_attribute(
                InstanceId=i["InstanceId"], Attribute="userData"
            )["UserData"].get("Value", "")
            out.append(
                {
                    "id": i["InstanceId"],
                    "state": i["State"]["Name"],
                    "zone": i["Placement"]["AvailabilityZone"],
                    "image": i["ImageId"],
                    "type": i["InstanceType"],
                    "subnet": i.get("SubnetId"),
                    "security_groups": security_groups(i),
                    "instance_profile": i.get("IamInstanceProfile", {}).get("Arn"),
                    "tags": {t["Key"]: t["Value"] for t in i.get("Tags", [])},
                    "user_data": user_data,
                }
            )
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["wait", "seed", "instances"])
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--region", required=True)
    parser.add_argument("--infra-id")
    parser.add_argument("--zones", default="a,b,c")
    parser.add_argument("--timeout", type=float, default=60)
    args = parser.parse_args()
    if args.command == "seed" and not args.infra_id:
        parser.error("seed needs --infra-id")
    result = {"wait": wait, "seed": seed, "instances": instances}[args.command](args)
    json.dump(result, sys.stdout)
    print()


if __name__ == "__main__":
    main()
